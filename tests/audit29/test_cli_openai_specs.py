"""``memstrata --embedder openai: ...`` and ``--llm openai: ...`` (no model named): a rich
traceback of the provider's ``ValueError`` ("needs a model name"), while the library
(``Memory(embedder="openai:")``) refuses the spec with a ``ValidationError`` listing the
choices; ``--embedder "openai: "`` went on to call the endpoint with the model " ". Session
29's audit: the CLI builds both through the library's factories: one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope
from memstrata.cli.app import app


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--embedder", "openai:"], "unknown embedder 'openai:'"),
        (["--embedder", "openai: "], "unknown embedder 'openai: '"),
        (["--embedder", "hashing", "--llm", "openai:"], "unknown LLM 'openai:'"),
        (["--embedder", "hashing", "--llm", "openai:  "], "unknown LLM 'openai:  '"),
    ],
)
@pytest.mark.parametrize("command", [["add", "hello"], ["list"]])
def test_an_openai_spec_without_a_model_is_one_line(
    tmp_path: Path, option: list[str], says: str, command: list[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees")
    res = CliRunner().invoke(app, ["--db", db, "--tenant", "t", "--user", "u", *option, *command])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert says in res.stderr, res.stderr
