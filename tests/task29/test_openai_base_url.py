"""A ``base_url`` the OpenAI SDK's client (httpx) cannot use is a ``ValidationError`` naming
``base_url`` and an example, raised when the embedder or the chat backend is built, sync and
async; the CLI prints it as one line (exit 2). Before session 29 the embedder's constructor
raised httpx's raw ``InvalidURL`` (a CLI traceback) and the chat backend raised it at its
first call; a URL without ``http(s)://`` or a host, or with a port over 65535, failed only
at the first request."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope, ValidationError
from memstrata._async.embedder.openai import AsyncOpenAIEmbedder
from memstrata._async.llm.openai import AsyncOpenAIChat
from memstrata._async.llm.openai import openai_llm as async_openai_llm
from memstrata.cli.app import app
from memstrata.embedder.openai import OpenAIEmbedder
from memstrata.llm.openai import OpenAIChat, openai_llm

BAD = ["http://[::1", "localhost:11434/v1", "ftp://host/v1", "http://", "http://h:99999/v1"]
BUILDERS = [
    lambda u: OpenAIEmbedder("m", base_url=u),
    lambda u: AsyncOpenAIEmbedder("m", base_url=u),
    lambda u: OpenAIChat("m", base_url=u),
    lambda u: AsyncOpenAIChat("m", base_url=u),
    lambda u: openai_llm("m", base_url=u),
    lambda u: async_openai_llm("m", base_url=u),
]


@pytest.mark.parametrize("url", BAD)
@pytest.mark.parametrize("build", BUILDERS)
def test_a_bad_base_url_is_refused_when_the_provider_is_built(url: str, build: object) -> None:
    with pytest.raises(ValidationError, match="base_url") as refused:
        build(url)  # type: ignore[operator]
    assert "http://localhost:11434/v1" in str(refused.value)  # what to give instead


@pytest.mark.parametrize(
    "url", [None, "", "http://[::1]:8000/v1", "https://api.example.com/v1", "HTTP://Host:8/v1"]
)
@pytest.mark.parametrize("build", BUILDERS)
def test_a_usable_base_url_is_kept(url: str | None, build: object) -> None:
    build(url)  # type: ignore[operator]


@pytest.mark.parametrize(
    "option",
    [
        ["--embedder", "openai:m"],
        ["--embedder", "hashing", "--llm", "openai:m"],
    ],
)
def test_the_cli_prints_one_line(tmp_path: Path, option: list[str]) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees")
    res = CliRunner().invoke(
        app,
        ["--db", db, "--tenant", "t", "--user", "u", *option, "--openai-base-url", "http://[::1"]
        + ["search", "bees"],
    )
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "base_url 'http://[::1' is not a URL" in res.stderr, res.stderr
    assert "Traceback" not in res.output
