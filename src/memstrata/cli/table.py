"""Plain-text tables for the CLI's human output, drawn without rich.

Importing rich's console and table is ~0.06-0.09 s, as much as a `memstrata search` spends
on its own work, so the tables every read command prints (``search``, ``list``, ``stats``,
...) are drawn here: rich's default look (heavy header box), columns fitted to the
terminal (80 columns when the output is not a terminal, ``COLUMNS`` wins), text wrapped at
spaces and folded inside longer words, East Asian wide characters counted as two columns.

Cells are shown as written: brackets are not markup, and control characters (an escape
sequence in a stored memory, say) are printed as ``\\x1b``-style escapes, never sent to the
terminal. A stream that cannot encode the box characters gets ASCII ones.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["PlainTable", "cell_width", "clean", "emit_table", "styled", "wrap", "write_line"]

_UNICODE_BOX = ("┏━┳┓", "┃┃┃", "┡━╇┩", "│││", "└─┴┘")
_ASCII_BOX = ("+-++", "|||", "+=++", "|||", "+-++")
# C0 and C1 control characters except newline (tabs are expanded before this applies).
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` safe for a terminal: tabs expanded, CR LF and CR read as newlines, every
    other control character shown as an escape (``\\x1b``) instead of being obeyed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _char_width(ch: str) -> int:
    if ch < "\u0300":  # ASCII and Latin: one column (the common case, no lookup)
        return 1
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Terminal columns ``text`` (one line, cleaned) takes."""
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


def _fold(word: str, width: int) -> list[str]:
    """``word`` cut into pieces of at most ``width`` columns (a wide character that does
    not fit a 1-column piece gets a piece of its own)."""
    pieces: list[str] = []
    current, used = "", 0
    for ch in word:
        w = _char_width(ch)
        if current and used + w > width:
            pieces.append(current)
            current, used = "", 0
        current += ch
        used += w
    if current or not pieces:
        pieces.append(current)
    return pieces


def wrap(text: str, width: int) -> list[str]:
    """``text`` (cleaned) as lines of at most ``width`` columns: wrapped at spaces, words
    longer than a line folded."""
    width = max(width, 1)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line, used = "", 0
        words = paragraph.lstrip(" ").split(" ")
        words[0] = " " * (len(paragraph) - len(paragraph.lstrip(" "))) + words[0]  # indent kept
        for word in words:
            w = cell_width(word)
            if line and used + 1 + w <= width:
                line, used = f"{line} {word}", used + 1 + w
                continue
            if line:
                lines.append(line)
            if w <= width:
                line, used = word, w
                continue
            *full, last = _fold(word, width)
            lines += full
            line, used = last, cell_width(last)
        lines.append(line)
    return lines


def _fit(widths: list[int], floors: list[int], available: int) -> list[int]:
    """Narrow the widest columns first until the row fits ``available`` columns (rich's
    rule); no column goes below its floor (its widest character: 1, or 2 for a wide one)."""
    widths = list(widths)
    excess = sum(widths) - available
    while excess > 0:
        shrinkable = [w for w, f in zip(widths, floors, strict=True) if w > f]
        if not shrinkable:
            break
        top = max(shrinkable)
        second = max((w for w in shrinkable if w < top), default=0)
        widest = [i for i, (w, f) in enumerate(zip(widths, floors, strict=True)) if w == top > f]
        for i in widest:
            if excess <= 0:
                break
            cut = min(top - max(second, floors[i]), -(-excess // len(widest)), excess)
            widths[i] -= cut
            excess -= cut
    return widths


@dataclass(slots=True)
class PlainTable:
    """A titled table of text cells (``add_row``), drawn by :meth:`render`."""

    title: str
    columns: Sequence[str]
    rows: list[list[str]] = field(default_factory=list)

    def add_row(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(self.columns)} cells, got {len(cells)}")
        self.rows.append([clean("-" if c is None else str(c)) for c in cells])

    def render(self, width: int, *, ascii_only: bool = False, bold_header: bool = False) -> str:
        top, head, sep, body, bottom = _ASCII_BOX if ascii_only else _UNICODE_BOX
        columns = [clean(c) for c in self.columns]
        natural = [
            max(
                [cell_width(line) for line in columns[i].split("\n")]
                + [cell_width(line) for row in self.rows for line in row[i].split("\n")]
            )
            for i in range(len(columns))
        ]
        floors = [
            max([1] + [_char_width(ch) for text in (c, *(r[i] for r in self.rows)) for ch in text])
            for i, c in enumerate(columns)
        ]
        # each column has one space of padding either side, plus one border per column + 1
        chrome = 3 * len(columns) + 1
        widths = _fit([max(w, 1) for w in natural], floors, width - chrome)

        def rule(box: str) -> str:
            left, line, cross, right = box[0], box[1], box[2], box[3]
            return left + cross.join(line * (w + 2) for w in widths) + right

        def row_lines(cells: Sequence[str], bar: str, bold: bool = False) -> list[str]:
            wrapped = [wrap(c, w) for c, w in zip(cells, widths, strict=True)]
            height = max(len(lines) for lines in wrapped)
            out = []
            for k in range(height):
                parts = []
                for lines, w in zip(wrapped, widths, strict=True):
                    text = lines[k] if k < len(lines) else ""
                    pad = " " * (w - cell_width(text))
                    parts.append(
                        f" \x1b[1m{text}\x1b[0m{pad} " if bold and text else f" {text}{pad} "
                    )
                out.append(bar[0] + bar[1].join(parts) + bar[2])
            return out

        table_width = sum(widths) + chrome
        lines = wrap(clean(self.title), max(width, table_width)) if self.title else []
        lines.append(rule(top))
        lines += row_lines(columns, head, bold_header)
        lines.append(rule(sep))
        for row in self.rows:
            lines += row_lines(row, body)
        lines.append(rule(bottom))
        return "\n".join(lines) + "\n"

    def __rich_console__(self, console: Any, options: Any) -> Any:
        """Printed through a rich console (``console.print(table)``): the same drawing."""
        from rich.text import Text

        yield Text(self.render(options.max_width).rstrip("\n"), no_wrap=True, overflow="ignore")


_SGR = {"dim": "2", "red": "31", "bold": "1"}


def styled(text: str, style: str, stream: IO[str]) -> str:
    """``text`` in ``style`` (dim, red, bold) when ``stream`` is a terminal and ``NO_COLOR``
    is unset; otherwise unchanged. ``text`` must already be :func:`clean`."""
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()) or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return text
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def _can_encode(stream: IO[str], text: str) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def write_line(text: str, stream: IO[str] | None = None) -> None:
    """``text`` and a newline on ``stream`` (stdout); characters the stream cannot encode
    are replaced, never an error."""
    stream = stream if stream is not None else sys.stdout
    out = text if text.endswith("\n") else text + "\n"
    if not _can_encode(stream, out):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        out = out.encode(encoding, "replace").decode(encoding)
    stream.write(out)


def emit_table(table: PlainTable, stream: IO[str] | None = None) -> None:
    """Draw ``table`` on ``stream`` (stdout) at the terminal's width."""
    stream = stream if stream is not None else sys.stdout
    width = shutil.get_terminal_size((80, 24)).columns
    ascii_only = not _can_encode(stream, "".join(_UNICODE_BOX))
    bold = styled("x", "bold", stream) != "x"
    drawn = table.render(width, ascii_only=ascii_only, bold_header=bold)
    write_line(drawn.rstrip("\n"), stream)
