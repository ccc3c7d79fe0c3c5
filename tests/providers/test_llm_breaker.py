"""The LLM circuit breaker: a failing endpoint is skipped for a cool-down, warned about once.

Against a real local HTTP server that hangs, and a port that refuses connections.
"""

from __future__ import annotations

import logging
import time

import pytest

from memstrata.llm.breaker import CircuitBreaker
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.llm.openai import OpenAIChat, openai_llm

from .openai_server import Reply, chat_body, serve

TEXT = "Remember: my flight to Oslo leaves on 3 May at 07:10"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("memstrata")
    ]


def test_breaker_state_machine() -> None:
    clock = FakeClock()
    b = CircuitBreaker(30, clock=clock)
    assert b.allow() and not b.is_open
    assert b.failure() is True  # first failure of the outage: warn
    assert not b.allow() and b.is_open and b.seconds_left() == 30
    clock.now += 29.9
    assert not b.allow()
    clock.now += 0.2
    assert b.allow()  # the one trial call after the cool-down
    assert not b.allow()  # ... and only one at a time
    assert b.failure() is False  # still the same outage: no second warning
    assert not b.allow()
    clock.now += 31
    assert b.allow()
    assert b.success() is True  # the outage ended
    assert b.allow() and b.success() is False
    with pytest.raises(ValueError):
        CircuitBreaker(-1)


def test_hanging_endpoint_is_called_once_then_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="memstrata")
    clock = FakeClock()
    with serve() as server:
        server.enqueue(*(Reply(body=chat_body('{"importance": 0.9}'), delay=1.0) for _ in range(3)))
        chat = OpenAIChat("m", base_url=server.url, api_key="k", timeout=0.3, max_retries=0)
        llm = PromptedLLM(chat, breaker=CircuitBreaker(60, clock=clock))
        try:
            expected = HeuristicLLM().score_importance(TEXT)
            started = time.perf_counter()
            assert llm.score_importance(TEXT) == expected  # timed out: heuristic
            first = time.perf_counter() - started
            started = time.perf_counter()
            for _ in range(20):
                assert llm.score_importance(TEXT) == expected
            rest = time.perf_counter() - started
            assert len(server.requests) == 1, "the open circuit must not call the endpoint"
            assert first >= 0.3 and rest < first, (first, rest)
            assert len(_warnings(caplog)) == 1, _warnings(caplog)
            assert "timed out" in _warnings(caplog)[0]
            # after the cool-down, one trial call; the server answers now -> closed again
            server.replies.clear()
            server.enqueue(Reply(body=chat_body('{"importance": 0.9}')))
            clock.now += 61
            assert llm.score_importance(TEXT) == 0.9
            assert len(server.requests) == 2 and not llm.breaker.is_open
        finally:
            chat.close()


def test_refused_endpoint_warns_once_across_tasks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memstrata")
    with serve() as server:
        url = server.url  # the port is closed once the server stops
    clock = FakeClock()
    llm = openai_llm("m", base_url=url, api_key="k", max_retries=0, timeout=2)
    llm.breaker = CircuitBreaker(60, clock=clock)
    heuristic = HeuristicLLM()
    assert llm.score_importance(TEXT) == heuristic.score_importance(TEXT)
    assert llm.summarize([TEXT]) == heuristic.summarize([TEXT])
    assert llm.extract_facts(["I live in Oslo"]) == heuristic.extract_facts(["I live in Oslo"])
    warnings = _warnings(caplog)
    assert len(warnings) == 1 and "could not connect" in warnings[0], warnings
    clock.now += 61  # trial call fails again: still the same outage, no warning
    llm.score_importance(TEXT)
    assert len(_warnings(caplog)) == 1
    assert llm.breaker.is_open


def test_invalid_json_is_not_an_endpoint_failure() -> None:
    with serve() as server:
        server.enqueue(Reply(body=chat_body("not json")), Reply(body=chat_body("nope")))
        llm = openai_llm("m", base_url=server.url, api_key="k", max_retries=0)
        llm.score_importance(TEXT)
        assert not llm.breaker.is_open  # the endpoint answered; the model was just wrong
        server.enqueue(Reply(body=chat_body('{"importance": 0.42}')))
        assert llm.score_importance(TEXT) == 0.42
        assert len(server.requests) == 3
