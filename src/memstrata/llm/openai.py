"""Chat completions from any OpenAI-compatible endpoint (extra ``openai``).

Works with OpenAI, DeepSeek, Qwen (DashScope compatible mode), Ollama and vLLM: pass
``base_url`` (e.g. ``http://localhost:11434/v1``) and ``api_key`` explicitly.
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ._openai_sdk import check_client_args, make_client, map_error
from .chat import PromptedLLM

__all__ = ["OpenAIChat", "openai_llm"]


class OpenAIChat:
    """A :class:`~memstrata.llm.chat.ChatBackend` over ``chat.completions``.

    Timeouts, 408/409/429 and 5xx are retried ``max_retries`` times with exponential
    backoff and jitter by the SDK (honouring ``Retry-After``); what still fails becomes a
    :class:`ProviderError`.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        temperature: float = 0.0,
    ) -> None:
        if not model:
            raise ValueError("OpenAIChat needs a model name, e.g. 'gpt-4o-mini'")
        self._model = model
        self._base_url = base_url
        self._temperature = temperature
        # The SDK takes ~1 s to import: the client is made on the first call, so a process
        # whose calls all go to the fallback (the circuit breaker is open) never imports it.
        check_client_args(timeout=timeout, max_retries=max_retries)
        self._client_args: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key,
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._client: Any = None
        # Some servers reject response_format; after one refusal we stop sending it.
        self._json_mode_supported = True

    @property
    def name(self) -> str:
        return f"openai/{self._model}"

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (made on first use)."""
        if self._client is None:
            self._client = make_client(**self._client_args)
        return self._client

    def close(self) -> None:
        """Release the HTTP connection pool."""
        if self._client is not None:
            self._client.close()

    def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str:
        import openai

        use_json = json_mode and self._json_mode_supported
        try:
            try:
                response = self._create(messages, use_json)
            except openai.BadRequestError:
                if not use_json:
                    raise
                self._json_mode_supported = False
                response = self._create(messages, False)
        except (openai.OpenAIError, ValueError) as exc:
            raise map_error(exc, what=f"chat with {self._model}", base_url=self._base_url) from exc
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise ProviderError(
                f"chat model {self._model} returned no message ({exc}); is base_url a chat "
                "completions server?"
            ) from None
        if not isinstance(content, str):
            raise ProviderError(f"chat model {self._model} returned an empty message")
        return content

    def _create(self, messages: list[dict[str, str]], json_mode: bool) -> Any:
        extra: dict[str, Any] = {}
        if json_mode:
            extra["response_format"] = {"type": "json_object"}
        return self.client.chat.completions.create(
            model=self._model, messages=messages, temperature=self._temperature, **extra
        )


def openai_llm(
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    cooldown_seconds: float = 60.0,
    **kw: Any,
) -> PromptedLLM:
    """A :class:`PromptedLLM` over :class:`OpenAIChat`; ``kw`` go to ``OpenAIChat``.

    After the endpoint fails, calls use the heuristic for ``cooldown_seconds``."""
    return PromptedLLM(
        OpenAIChat(model, base_url=base_url, api_key=api_key, **kw),
        cooldown_seconds=cooldown_seconds,
    )
