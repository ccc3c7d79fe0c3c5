"""The record types' names are written once for the HTTP API and the CLI
(``memstrata/record_names.py``; before, ``server/dto.py`` and ``cli/app.py`` each had a
copy); they must stay the values of ``RecordType``, which nothing checked before."""

from __future__ import annotations

from typing import get_args

from typer.testing import CliRunner

from memstrata.cli.app import app
from memstrata.record_names import RECORD_TYPE_NAMES, RecordTypeName
from memstrata.records import RecordType
from memstrata.server import dto


def test_the_names_are_the_record_types_in_order() -> None:
    assert tuple(t.value for t in RecordType) == RECORD_TYPE_NAMES
    assert get_args(dto.MemoryIn.model_fields["type"].annotation) == get_args(RecordTypeName)


def test_the_cli_offers_every_record_type() -> None:
    text = CliRunner().invoke(app, ["add", "--help"], terminal_width=1000).output
    assert "Record type when not a message: " + ", ".join(RECORD_TYPE_NAMES) in " ".join(
        text.split()
    )
