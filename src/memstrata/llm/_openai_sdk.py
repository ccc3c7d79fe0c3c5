"""The one place memstrata touches the ``openai`` SDK: client creation and error mapping.

Shared by the OpenAI-compatible embedder and chat backend so both speak to OpenAI, DeepSeek,
Qwen, Ollama or vLLM the same way. The SDK already retries timeouts, 408/409/429 and 5xx
with exponential backoff and jitter (honouring ``Retry-After``), so we configure it rather
than write a second retry loop.

Everything here is pure (no request is made), so the module is shared by both trees: the
async sources (``_async/embedder/openai.py``, ``_async/llm/openai.py``) ask for an
``AsyncOpenAI`` client, which their generated sync twins turn into ``OpenAI``.
"""

from __future__ import annotations

from typing import Any

from ..errors import MissingDependencyError, ProviderError, ValidationError

__all__ = [
    "DEFAULT_BASE_URL",
    "NO_API_KEY",
    "check_base_url",
    "check_client_args",
    "dims_unknown",
    "make_client",
    "map_error",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers (Ollama, vLLM) ignore the key; hosted APIs answer 401, which map_error
# turns into advice to pass api_key. Passing a placeholder also stops the SDK from reading
# OPENAI_API_KEY: the library never reads the environment, only the CLI and server do.
NO_API_KEY = "no-api-key-given"


def check_client_args(*, timeout: float, max_retries: int) -> None:
    """What :func:`make_client` checks, without importing the SDK (~1 s): the package is
    installed and the numbers make sense."""
    from importlib.util import find_spec

    if find_spec("openai") is None:
        raise MissingDependencyError(
            "OpenAI-compatible providers need the openai package (not installed): "
            "run `pip install 'memstrata[openai]'`"
        )
    if timeout <= 0:
        raise ValidationError(f"timeout must be positive seconds, got {timeout}")
    if max_retries < 0:
        raise ValidationError(f"max_retries must be 0 or more, got {max_retries}")


_EXAMPLE = "e.g. http://localhost:11434/v1 or https://api.openai.com/v1"


def check_base_url(base_url: object) -> str | None:
    """``base_url`` as the SDK's client will parse it (with httpx, a dependency of both), or
    a :class:`ValidationError` saying what is wrong, when the provider is built: before
    session 29 httpx's raw ``InvalidURL`` ("Invalid port: ':1'" for ``http://[::1``)
    escaped the embedder's constructor (the chat backend's first call), a CLI traceback.
    ``None`` and ``""`` stand for :data:`DEFAULT_BASE_URL`."""
    if base_url is None or base_url == "":
        return None
    if not isinstance(base_url, str):
        raise ValidationError(
            f"base_url must be a string URL ({_EXAMPLE}), got {type(base_url).__name__}"
        )
    import httpx

    try:
        url = httpx.URL(base_url)
        port = url.port
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise ValidationError(
            f"base_url {base_url!r} is not a URL ({exc}); give the endpoint's address, "
            f"{_EXAMPLE} (an IPv6 host in brackets: http://[::1]:8000/v1)"
        ) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValidationError(
            f"base_url {base_url!r} needs http:// or https:// and a host, {_EXAMPLE}"
        )
    if port is not None and not 0 < port < 65536:
        raise ValidationError(
            f"base_url {base_url!r} has port {port}, outside 1-65535; give the endpoint's "
            f"address, {_EXAMPLE}"
        )
    return base_url


_CLIENT_CLASSES = ("OpenAI", "AsyncOpenAI")


def make_client(
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    client_class: str = "OpenAI",
) -> Any:
    """An ``openai.OpenAI`` (or ``openai.AsyncOpenAI``) client configured only from the
    arguments."""
    if client_class not in _CLIENT_CLASSES:
        raise ValidationError(
            f"client_class must be one of {_CLIENT_CLASSES}, got {client_class!r}"
        )
    try:
        import openai
    except ImportError as exc:
        raise MissingDependencyError(
            f"OpenAI-compatible providers need the openai package ({exc}): "
            "run `pip install 'memstrata[openai]'`"
        ) from None
    check_client_args(timeout=timeout, max_retries=max_retries)
    base_url = check_base_url(base_url)
    sdk_class = openai.AsyncOpenAI if client_class == "AsyncOpenAI" else openai.OpenAI
    return sdk_class(
        base_url=base_url or DEFAULT_BASE_URL,
        api_key=api_key or NO_API_KEY,
        timeout=timeout,
        max_retries=max_retries,
    )


def map_error(exc: Exception, *, what: str, base_url: str | None) -> ProviderError:
    """Translate an SDK exception into a :class:`ProviderError` saying what to do."""
    import openai

    where = base_url or DEFAULT_BASE_URL
    if isinstance(exc, openai.APITimeoutError):
        hint = "the endpoint timed out after all retries; raise timeout or check the server"
    elif isinstance(exc, openai.APIConnectionError):
        hint = "could not connect; check base_url and that the server is running"
    elif isinstance(exc, openai.AuthenticationError):
        hint = "authentication failed; pass a valid api_key"
    elif isinstance(exc, openai.NotFoundError):
        hint = "not found; check the model name and that base_url ends with /v1"
    elif isinstance(exc, openai.RateLimitError):
        hint = "rate limited after all retries; slow down or raise max_retries"
    elif isinstance(exc, openai.APIStatusError):
        hint = f"the endpoint answered HTTP {exc.status_code}"
    elif isinstance(exc, openai.APIResponseValidationError):
        hint = "the endpoint's answer is not OpenAI-shaped; is base_url the right server?"
    elif isinstance(exc, ValueError):  # the SDK lets json.JSONDecodeError through
        hint = "the answer is not valid JSON; is base_url an OpenAI-compatible server?"
    else:
        hint = "the request failed"
    return ProviderError(f"{what} at {where}: {hint} ({type(exc).__name__}: {exc})")


def dims_unknown(model_id: str) -> ProviderError:
    """The error of an async embedder asked for ``dims`` before it knows them: a property
    cannot await the probe request (the sync embedder makes it on the spot)."""
    return ProviderError(
        f"embedder {model_id} does not know its dims yet: pass dims=..., or "
        "`await embedder.probe_dims()` (or embed once) before reading them"
    )
