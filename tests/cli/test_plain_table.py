"""The CLI's plain-text tables (cli/table.py): every line fits, nothing is lost or obeyed."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.cli.table import PlainTable, cell_width, clean, emit_table, styled, wrap

# Latin, CJK (two columns each), combining marks (none), brackets, spaces, newlines, tabs,
# escape sequences and other control characters.
_TEXT = st.text(
    alphabet=st.sampled_from(
        list("abcXYZ019 []/-_.,:")
        + list("中文記憶한국어カナ")
        + ["\u0301", "\n", "\t", "\x1b", "\x07", "\r", "\x9b", "é"]
    ),
    max_size=120,
)


def _visible(text: str) -> str:
    return "".join(ch for ch in clean(text) if ch not in " \n")


@given(_TEXT, st.integers(min_value=1, max_value=60))
@settings(max_examples=300, deadline=None)
def test_wrap_keeps_every_character_and_fits_the_width(text: str, width: int) -> None:
    lines = wrap(clean(text), width)
    assert "".join(lines).replace(" ", "") == _visible(text)
    for line in lines:
        # a two-column character cannot be split: alone on a 1-column line it takes 2
        assert cell_width(line) <= max(width, 2), (line, width)


@given(
    st.lists(_TEXT, min_size=1, max_size=4).flatmap(
        lambda header: st.tuples(
            st.just(header),
            st.lists(st.lists(_TEXT, min_size=len(header), max_size=len(header)), max_size=5),
        )
    ),
    st.integers(min_value=10, max_value=160),
)
@settings(max_examples=200, deadline=None)
def test_every_line_of_a_table_has_the_same_width_within_the_terminal(
    table: tuple[list[str], list[list[str]]], width: int
) -> None:
    header, rows = table
    t = PlainTable("", header)
    for row in rows:
        t.add_row(*row)
    drawn = t.render(width)
    lines = drawn.rstrip("\n").split("\n")
    widths = {cell_width(line) for line in lines}
    assert len(widths) == 1, drawn
    # the borders need 3 columns per column + 1; cells at least one column (two for a
    # wide character that cannot be split)
    assert widths.pop() <= max(width, 3 * len(header) + 1 + 2 * len(header)), drawn
    assert not any(ch in drawn for ch in "\x1b\x07\r\x9b")  # nothing reaches the terminal
    cells = "".join(
        line[1:-1] for line in lines[1:] if line[0] in "┃│"
    )  # every cell's text, in some order, is somewhere in the drawing
    for text in [*header, *(c for row in rows for c in row)]:
        for ch in _visible(text):
            assert ch in cells, (ch, drawn)


def test_brackets_and_escape_sequences_are_printed_as_written() -> None:
    t = PlainTable("search: [x] memstrata[postgres]", ("id", "text"))
    t.add_row("[/]", "step [x] done\x1b[2J\x1b]0;owned\x07 pip install 'memstrata[postgres]'")
    drawn = t.render(200)
    assert "search: [x] memstrata[postgres]" in drawn
    assert "step [x] done\\x1b[2J\\x1b]0;owned\\x07 pip install 'memstrata[postgres]'" in drawn
    assert "\x1b" not in drawn and "\x07" not in drawn


def test_columns_narrow_widest_first_and_text_wraps_at_spaces() -> None:
    t = PlainTable("t", ("#", "text"))
    t.add_row(1, "alpha beta gamma delta")
    drawn = t.render(20).splitlines()
    assert drawn == [
        "t",
        "┏━━━┳━━━━━━━━━━━━━━┓",
        "┃ # ┃ text         ┃",
        "┡━━━╇━━━━━━━━━━━━━━┩",
        "│ 1 │ alpha beta   │",
        "│   │ gamma delta  │",
        "└───┴──────────────┘",
    ]


def test_wide_characters_take_two_columns_and_long_words_are_folded() -> None:
    assert cell_width("記憶") == 4 and cell_width("e\u0301") == 1
    assert wrap("記憶記憶記", 4) == ["記憶", "記憶", "記"]
    assert wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert wrap("  indented", 20) == ["  indented"]


def test_a_stream_that_cannot_encode_box_characters_gets_ascii() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    t = PlainTable("t", ("k", "v"))
    t.add_row("café", "記憶")
    emit_table(t, stream)
    stream.flush()
    text = raw.getvalue().decode("ascii")
    assert text.splitlines()[1].startswith("+-") and "caf?" in text and "??" in text


def test_styles_only_on_a_terminal_and_never_with_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert styled("x", "red", Tty()) == "\x1b[31mx\x1b[0m"
    assert styled("x", "red", io.StringIO()) == "x"
    monkeypatch.setenv("NO_COLOR", "1")
    assert styled("x", "red", Tty()) == "x"


def test_cli_tables_follow_columns_and_keep_user_text(tmp_path: Path) -> None:
    """End to end: `memstrata list` at COLUMNS=50 fits 50 columns and shows the text."""
    base = ["--db", "sqlite:///w.db", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    main = "from memstrata.cli.app import main; main()"

    def run(*args: str, columns: str = "50") -> subprocess.CompletedProcess[str]:
        env = {"COLUMNS": columns, "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
        return subprocess.run(
            [sys.executable, "-c", main, *base, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    added = run("add", "* [x] 記憶 pip install 'memstrata[postgres]' \x1b[31m")
    assert added.returncode == 0, added.stderr
    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert all(cell_width(line) <= 50 for line in lines), listed.stdout
    body = "".join(line.strip("│ ") for line in lines)
    assert "[x]" in body and "記憶" in body and "\\x1b[31m" in body and "\x1b" not in body
    wide = run("search", "postgres", columns="200")
    assert wide.returncode == 0, wide.stderr
    assert "pip install 'memstrata[postgres]'" in wide.stdout
