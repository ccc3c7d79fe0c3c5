"""The LoCoMo file, read into typed records.

LoCoMo (``locomo10.json``, CC BY-NC 4.0) is read at run time from a path the user gives; it
is never copied into the repository or the package. Its quirks are handled here and nowhere
else: session dates written like ``"1:56 pm on 8 May, 2023"``, image turns that carry a
``blip_caption`` instead of (or besides) text, integer answers, adversarial questions whose
answer lives under ``adversarial_answer``, and malformed evidence ids (``"D10:"``,
``"D:11:26"``, ``"D8:6; D9:17"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORY_NAMES",
    "Conversation",
    "LocomoDataError",
    "Question",
    "Session",
    "Turn",
    "default_data_path",
    "load_locomo",
    "normalize_evidence",
    "parse_session_date",
    "select_conversations",
]

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

DATA_HINT = (
    "LoCoMo is not shipped with memstrata (CC BY-NC 4.0). Download locomo10.json from "
    "https://github.com/snap-research/locomo (data/locomo10.json) and pass --data PATH."
)

TURN_SPACING = timedelta(seconds=10)


class LocomoDataError(ValueError):
    """The LoCoMo file is missing or not shaped like LoCoMo."""


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    observed_at: datetime
    caption: str | None = None

    @property
    def content(self) -> str:
        """The turn's words, with a shared photo's caption inlined."""
        if self.caption:
            photo = f"[shares a photo: {self.caption}]"
            return f"{self.text} {photo}".strip() if self.text else photo
        return self.text


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_text: str
    started_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]

    @property
    def has_answer(self) -> bool:
        return self.category != 5 and bool(self.answer.strip())


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(t for s in self.sessions for t in s.turns)


_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08 13:56 UTC."""
    m = _DATE.match(text)
    if not m:
        raise LocomoDataError(f"unrecognised LoCoMo session date {text!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower()) or _MONTHS.get(
        next((k for k in _MONTHS if k.startswith(month_name.lower()[:3])), "")
    )
    if month is None:
        raise LocomoDataError(f"unrecognised month in LoCoMo session date {text!r}")
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalize_evidence(raw: Sequence[object]) -> tuple[str, ...]:
    """Canonical ``D<session>:<turn>`` ids, split and cleaned, in order, without duplicates.

    ``"D8:6; D9:17"`` and ``"D9:1 D4:4"`` hold several ids; ``"D:11:26"`` means ``D11:26``;
    ``"D10:"`` and ``"D"`` name no turn and are dropped; ``"D3:05"`` becomes ``D3:5``.
    """
    out: list[str] = []
    for item in raw:
        for m in _EVIDENCE.finditer(str(item)):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia not in out:
                out.append(dia)
    return tuple(out)


def _canonical_dia(dia_id: str) -> str:
    ids = normalize_evidence([dia_id])
    return ids[0] if ids else dia_id


def _parse_conversation(raw: dict[str, Any]) -> Conversation:
    conv = raw.get("conversation")
    if not isinstance(conv, dict):
        raise LocomoDataError("a LoCoMo sample has no 'conversation' object")
    sessions: list[Session] = []
    numbers = sorted(
        int(k.split("_")[1])
        for k in conv
        if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)
    )
    for n in numbers:
        date_text = str(conv.get(f"session_{n}_date_time", ""))
        start = parse_session_date(date_text)
        turns = []
        for i, t in enumerate(conv[f"session_{n}"]):
            caption = t.get("blip_caption")
            turns.append(
                Turn(
                    dia_id=_canonical_dia(str(t["dia_id"])),
                    speaker=str(t.get("speaker", "")),
                    text=str(t.get("text", "") or "").strip(),
                    session=n,
                    observed_at=start + i * TURN_SPACING,
                    caption=str(caption).strip() if caption else None,
                )
            )
        sessions.append(Session(n, date_text, start, tuple(turns)))
    questions = []
    for q in raw.get("qa", []) or []:
        answer = q.get("answer", q.get("adversarial_answer", ""))
        questions.append(
            Question(
                question=str(q["question"]),
                answer="" if answer is None else str(answer),
                category=int(q["category"]),
                evidence=normalize_evidence(q.get("evidence", []) or []),
            )
        )
    return Conversation(
        sample_id=str(raw.get("sample_id", "")),
        speaker_a=str(conv.get("speaker_a", "")),
        speaker_b=str(conv.get("speaker_b", "")),
        sessions=tuple(sessions),
        questions=tuple(questions),
    )


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo-shaped JSON file (a list of samples)."""
    p = Path(path)
    if not p.is_file():
        raise LocomoDataError(f"LoCoMo data not found at {p}. {DATA_HINT}")
    with p.open(encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise LocomoDataError(f"{p} is not a LoCoMo file: expected a JSON list of samples")
    return [_parse_conversation(s) for s in data]


def default_data_path(cwd: Path | None = None) -> Path:
    """``../shared/data/locomo10.json`` relative to the working directory, when present."""
    candidate = (cwd or Path.cwd()) / ".." / "shared" / "data" / "locomo10.json"
    if candidate.is_file():
        return candidate.resolve()
    raise LocomoDataError(f"no --data given and {candidate} does not exist. {DATA_HINT}")


def select_conversations(convs: Sequence[Conversation], spec: str | None) -> list[Conversation]:
    """Pick conversations by index or sample id: ``"0,1"``, ``"conv-26"``, ``"0-2"``."""
    if not spec:
        return list(convs)
    picked: list[Conversation] = []
    by_id = {c.sample_id: c for c in convs}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part in by_id:
            chosen = [by_id[part]]
        elif re.fullmatch(r"\d+", part):
            i = int(part)
            if i >= len(convs):
                raise LocomoDataError(f"conversation index {i} out of range (0..{len(convs) - 1})")
            chosen = [convs[i]]
        elif re.fullmatch(r"\d+-\d+", part):
            lo, hi = (int(x) for x in part.split("-"))
            chosen = list(convs[lo : hi + 1])
        else:
            known = ", ".join(by_id)
            raise LocomoDataError(f"unknown conversation {part!r}; use an index or one of {known}")
        picked.extend(c for c in chosen if c not in picked)
    return picked
