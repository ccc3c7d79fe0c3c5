"""``build_context(system_prompt=...)`` gave back a lone surrogate as it was given: the
system message then fails wherever it is encoded (``json.dumps(..., ensure_ascii=False)``,
an HTTP client, a log line), far from the call that took it. Every other text a caller
hands over is refused with a ``ValidationError`` saying where (the query too). A NUL is
kept, as in the query: nothing is stored, and JSON carries it (HTTP and MCP already pass a
NUL through both; neither can carry a lone surrogate)."""

from __future__ import annotations

import asyncio
import json

import pytest

from memstrata import AsyncMemory, Memory, Scope, ValidationError

ALICE = Scope("acme", "alice", session="s1")


@pytest.mark.parametrize("prompt", ["be kind \ud800", "\udfff", "a\udc80b" * 3])
def test_a_lone_surrogate_in_the_system_prompt_is_refused(mem: Memory, prompt: str) -> None:
    mem.add(ALICE.user_scope, "I keep bees")
    with pytest.raises(ValidationError, match="system_prompt contains a lone surrogate"):
        mem.build_context(ALICE, "bees", token_budget=500, system_prompt=prompt)


def test_async_refuses_it_too() -> None:
    async def run() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as amem:
            with pytest.raises(ValidationError, match="system_prompt"):
                await amem.build_context(ALICE, "bees", system_prompt="x\ud800")

    asyncio.run(run())


def test_a_good_system_prompt_comes_back_as_given(mem: Memory) -> None:
    for prompt in ("be kind", "be\x00kind", "   ", "☃ 雪 \U0001f600"):
        built = mem.build_context(ALICE, "bees", token_budget=500, system_prompt=prompt)
        assert built.messages[0] == {"role": "system", "content": prompt}
        json.dumps(built.messages, ensure_ascii=False).encode("utf-8")
    assert (
        mem.build_context(ALICE, "bees", token_budget=500, system_prompt="").messages[0]["role"]
        != "system"
    )
