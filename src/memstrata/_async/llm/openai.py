"""Chat completions from any OpenAI-compatible endpoint (extra ``openai``).

Works with OpenAI, DeepSeek, Qwen (DashScope compatible mode), Ollama and vLLM: pass
``base_url`` (e.g. ``http://localhost:11434/v1``) and ``api_key`` explicitly.

One source (``_async/llm/openai.py``) writes both backends: the async one over the SDK's
async client, the sync one (generated) over its sync client.
"""

from __future__ import annotations

from typing import Any

from memstrata._async.llm.chat import AsyncPromptedLLM
from memstrata.errors import ProviderError, ValidationError
from memstrata.llm._openai_sdk import check_base_url, check_client_args, make_client, map_error

__all__ = ["AsyncOpenAIChat", "openai_llm"]


class AsyncOpenAIChat:
    """A :class:`~memstrata._async.llm.chat.AsyncChatBackend` over ``chat.completions``.

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
            raise ValidationError("AsyncOpenAIChat needs a model name, e.g. 'gpt-4o-mini'")
        self._model = model
        self._base_url = base_url = check_base_url(base_url)  # refused here, not at a call
        self._temperature = temperature
        # The SDK takes ~1 s to import: the client is made on the first call, so a process
        # whose calls all go to the fallback (the circuit breaker is open) never imports it.
        check_client_args(timeout=timeout, max_retries=max_retries)
        self._client_args: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key,
            "timeout": timeout,
            "max_retries": max_retries,
            "client_class": "AsyncOpenAI",
        }
        self._client: Any = None
        # Some servers reject response_format; after one refusal we stop sending it.
        self._json_mode_supported = True

    @property
    def name(self) -> str:
        return f"openai/{self._model}"

    @property
    def client(self) -> Any:
        """The SDK's client (made on first use)."""
        if self._client is None:
            self._client = make_client(**self._client_args)
        return self._client

    async def aclose(self) -> None:
        """Release the HTTP connection pool."""
        if self._client is not None:
            await self._client.close()

    async def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str:
        import openai

        use_json = json_mode and self._json_mode_supported
        try:
            try:
                response = await self._create(messages, use_json)
            except openai.BadRequestError:
                if not use_json:
                    raise
                self._json_mode_supported = False
                response = await self._create(messages, False)
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

    async def _create(self, messages: list[dict[str, str]], json_mode: bool) -> Any:
        extra: dict[str, Any] = {}
        if json_mode:
            extra["response_format"] = {"type": "json_object"}
        return await self.client.chat.completions.create(
            model=self._model, messages=messages, temperature=self._temperature, **extra
        )


def openai_llm(
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    cooldown_seconds: float = 60.0,
    **kw: Any,
) -> AsyncPromptedLLM:
    """A :class:`AsyncPromptedLLM` over :class:`AsyncOpenAIChat`; ``kw`` go to it.

    After the endpoint fails, calls use the heuristic for ``cooldown_seconds``."""
    return AsyncPromptedLLM(
        AsyncOpenAIChat(model, base_url=base_url, api_key=api_key, **kw),
        cooldown_seconds=cooldown_seconds,
    )
