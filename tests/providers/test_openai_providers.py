"""OpenAI-compatible embedder and chat against a real local HTTP server."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memstrata.embedder.openai import OpenAIEmbedder
from memstrata.errors import ProviderError
from memstrata.llm.openai import OpenAIChat, openai_llm

from .openai_server import Reply, chat_body, serve

FAST_RETRY = {"retry-after-ms": "5"}


def test_embedder_discovers_dims_and_normalises() -> None:
    with serve() as server:
        emb = OpenAIEmbedder("e", base_url=server.url, api_key="k", batch_size=2)
        try:
            vecs = emb.embed_batch(["a", "bb", "ccc"])
            assert emb.dims == 4 and vecs.shape == (3, 4)
            assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
            assert [len(body["input"]) for _, body in server.requests] == [2, 1]
            assert emb.model_id == "openai/e"
        finally:
            emb.close()


def test_embedder_retries_500_then_succeeds() -> None:
    with serve() as server:
        server.enqueue(Reply(500, {"error": {"message": "boom"}}, FAST_RETRY))
        emb = OpenAIEmbedder("e", base_url=server.url, api_key="k", dims=4, max_retries=2)
        try:
            assert emb.embed_batch(["x"]).shape == (1, 4)
            assert len(server.requests) == 2
        finally:
            emb.close()


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (Reply(200, "{not json"), "not valid JSON"),
        (Reply(401, {"error": {"message": "bad key"}}), "api_key"),
        (Reply(404, {"error": {"message": "no model"}}), "model name"),
        (Reply(200, {"object": "list", "data": [{"index": 0, "embedding": [1.0, 2.0]}]}), "shape"),
    ],
)
def test_embedder_errors_become_provider_errors(reply: Reply, match: str) -> None:
    with serve() as server:
        server.enqueue(reply)
        emb = OpenAIEmbedder("e", base_url=server.url, api_key="k", dims=4, max_retries=0)
        try:
            with pytest.raises(ProviderError, match=match):
                emb.embed_batch(["x"])
        finally:
            emb.close()


def test_unreachable_endpoint() -> None:
    with serve() as server:
        url = server.url
    emb = OpenAIEmbedder("e", base_url=url, dims=4, max_retries=0, timeout=2)
    try:
        with pytest.raises(ProviderError, match="could not connect"):
            emb.embed_batch(["x"])
    finally:
        emb.close()


def test_chat_json_mode_and_retry_on_500() -> None:
    with serve() as server:
        server.enqueue(
            Reply(503, {"error": {"message": "busy"}}, FAST_RETRY),
            Reply(200, chat_body('{"importance": 0.7}')),
        )
        chat = OpenAIChat("m", base_url=server.url, api_key="k", max_retries=2)
        try:
            llm = openai_llm("m", base_url=server.url, api_key="k")
            assert llm.name == "prompted/openai/m"
            out = chat.complete([{"role": "user", "content": "hi"}], json_mode=True)
            assert json.loads(out) == {"importance": 0.7}
            path, body = server.requests[-1]
            assert path == "/v1/chat/completions"
            assert body["response_format"] == {"type": "json_object"}
            assert len(server.requests) == 2
            llm.backend.close()  # type: ignore[attr-defined]
        finally:
            chat.close()


def test_chat_drops_json_mode_when_server_refuses_it() -> None:
    with serve() as server:
        server.enqueue(
            Reply(400, {"error": {"message": "response_format unsupported"}}),
            Reply(200, chat_body("{}")),
        )
        chat = OpenAIChat("m", base_url=server.url, api_key="k", max_retries=0)
        try:
            assert chat.complete([{"role": "user", "content": "x"}], json_mode=True) == "{}"
            assert "response_format" not in server.requests[1][1]
        finally:
            chat.close()


def test_prompted_llm_over_http_falls_back_on_malformed_answers() -> None:
    with serve() as server:
        server.enqueue(Reply(200, chat_body("not json")), Reply(200, chat_body("nope")))
        chat = OpenAIChat("m", base_url=server.url, api_key="k", max_retries=0)
        try:
            from memstrata.llm.chat import PromptedLLM

            facts = PromptedLLM(chat).extract_facts(["我叫李雷"])
            assert [(f.key, f.value) for f in facts] == [("name", "李雷")]
            assert len(server.requests) == 2
        finally:
            chat.close()


def test_chat_malformed_http_body() -> None:
    with serve() as server:
        server.enqueue(Reply(200, "{broken"))
        chat = OpenAIChat("m", base_url=server.url, api_key="k", max_retries=0)
        try:
            with pytest.raises(ProviderError):
                chat.complete([{"role": "user", "content": "x"}], json_mode=False)
        finally:
            chat.close()
