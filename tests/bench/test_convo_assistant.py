"""The user ↔ assistant style of the synthetic set: deterministic, bilingual, gold data right,
stored with roles, measured through the same path as the other sets."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.bench.cli import bench_app
from memstrata.bench.convo.assistant import (
    ASSISTANT,
    CATEGORY_NAMES,
    REPLY_TOKENS,
    USER,
    generate_assistant,
)
from memstrata.bench.convo.generate import generate
from memstrata.bench.locomo.metrics import answer_recall
from memstrata.tokens import count_tokens


def test_same_seed_same_set_and_languages_share_structure() -> None:
    en, en2, zh = (
        generate_assistant("en", 2),
        generate_assistant("en", 2),
        generate_assistant("zh", 2),
    )
    assert en == en2
    assert generate_assistant("en", 2, seed=5) != en
    for a, b in zip(en, zh, strict=True):
        assert [len(s.turns) for s in a.sessions] == [len(s.turns) for s in b.sessions]
        assert [s.started_at for s in a.sessions] == [s.started_at for s in b.sessions]
        assert [(q.evidence, q.category) for q in a.questions] == [
            (q.evidence, q.category) for q in b.questions
        ]
    assert all(re.search(r"[\u4e00-\u9fff]", t.text) for t in zh[0].turns)
    # The default style is another set (its stores and figures stay comparable).
    assert generate("en", 1)[0].sample_id != en[0].sample_id


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_turns_alternate_and_replies_are_long(lang: str) -> None:
    for conv in generate_assistant(lang, 2):
        assert 24 <= len(conv.sessions) <= 32
        for sess in conv.sessions:
            speakers = [t.speaker for t in sess.turns]
            assert speakers == [USER, ASSISTANT] * (len(speakers) // 2)
        replies = [count_tokens(t.text) for t in conv.turns if t.speaker == ASSISTANT]
        lo, hi = REPLY_TOKENS
        # a reply stops at the first sentence that reaches its drawn length
        assert min(replies) >= lo and max(replies) <= hi + 40
        assert sum(replies) > 3 * sum(count_tokens(t.text) for t in conv.turns if t.speaker == USER)
        assert {q.category for q in conv.questions} == set(CATEGORY_NAMES)
        assert 5 not in CATEGORY_NAMES  # the runner takes category 5 for "no answer"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gold_answers_are_in_their_evidence(lang: str) -> None:
    for conv in generate_assistant(lang, 4):
        by_dia = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            assert q.evidence and all(d in by_dia for d in q.evidence)
            turns = [by_dia[d] for d in q.evidence]
            if q.category == 7:  # what the assistant said, inside one long reply
                assert [t.speaker for t in turns] == [ASSISTANT]
            else:  # what the user said, inside a request
                assert all(t.speaker == USER for t in turns)
            text = " ".join(t.text for t in turns)
            if q.category == 2 and answer_recall(q.answer, text) < 1.0:
                # a date: "today" is the day it was said, "last <weekday>" the week before
                fmt = "%d %B %Y" if lang == "en" else "%Y年%m月%d日"
                gold = datetime.strptime(q.answer, fmt).date()
                said = turns[0].observed_at.date()
                assert 0 <= (said - gold).days <= 13, (q, said)
                assert (said - gold).days == 0 or re.search(r"Last |上周", text)
                continue
            assert answer_recall(q.answer, text) == 1.0, (q, text)


def test_updates_keep_the_old_value_in_the_history() -> None:
    for conv in generate_assistant("en", 4):
        history = " ".join(t.text for t in conv.turns)
        by_dia = {t.dia_id: t for t in conv.turns}
        now = {q.question: q for q in conv.questions if q.category == 3}
        job = next(q for q in now.values() if "work for now" in q.question)
        switch = by_dia[job.evidence[-1]].text
        old = re.search(r"I left (.+?) and joined", switch)
        assert old and old.group(1) != job.answer and old.group(1) in history
        fav = now["What is my favourite restaurant these days?"]
        assert re.search(r"My favourite place for .+ is ", history)
        assert answer_recall(fav.answer, by_dia[fav.evidence[0]].text) == 1.0


def test_questions_are_the_users_and_distractors_share_the_values() -> None:
    (conv,) = generate_assistant("en", 1)
    assert all(re.search(r"\b(I|my|me|you)\b", q.question) for q in conv.questions)
    # every other conversation asks some questions about the user as requests
    _, polite = generate_assistant("en", 2)
    assert any(q.question.startswith(("Can you", "Could you", "Do you")) for q in polite.questions)
    assert [q.answer for q in polite.questions] == [
        q.answer for q in generate_assistant("en", 2)[1].questions
    ]
    users = [t.text for t in conv.turns if t.speaker == USER]
    # requests about other people carry the same kinds of values as the planted facts
    assert any(
        re.match(r"(My (neighbour|friend|colleague|cousin|roommate|nephew))", u) for u in users
    )


def test_unknown_language_and_style_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="language"):
        generate_assistant("fr", 1)
    result = CliRunner().invoke(bench_app, ["convo", "--style", "forum", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--style" in result.output


def test_cli_assistant_style_stores_roles_and_reports(tmp_path: Path) -> None:
    from memstrata import Memory, Scope

    out, stores = tmp_path / "out", tmp_path / "stores"
    args = ["convo", "--style", "assistant", "--out", str(out), "--conversations", "1"]
    args += ["--embedder", "hashing", "--store-dir", str(stores), "--lang", "zh", "--json"]
    result = CliRunner().invoke(bench_app, args)
    assert result.exit_code == 0, result.output
    md = (out / "convo-assistant-zh.md").read_text(encoding="utf-8")
    assert md.startswith("# Synthetic user-assistant conversations, Chinese")
    assert "7 assistant said" in md and "6 preference" in md
    res = json.loads((out / "convo-assistant-zh.json").read_text(encoding="utf-8"))
    (conv,) = generate_assistant("zh", 1)
    assert res["ingest"]["messages"] == len(conv.turns)
    assert res["methods"]["memstrata build_context"]["answer_recall"]["1000"]["all"]["n"] == len(
        conv.questions
    )
    mem = Memory(
        f"sqlite:///{stores / 'assistant-zh' / f'{conv.sample_id}.db'}", embedder="hashing"
    )
    try:
        for turn in conv.turns[:2]:  # a request and its reply, stored as an agent would
            # Read by dia_id, not found by a search: a request is repeated word for word in
            # later sessions, and top_k=5 of six equal scores broke the tie by random id.
            found = mem.list(
                Scope("locomo", conv.sample_id), filters={"metadata": {"dia_id": turn.dia_id}}
            )
            (rec,) = [r for r in found if r.metadata.get("dia_id") == turn.dia_id]
            assert rec.role is not None and rec.role.value == turn.speaker
            assert rec.text == turn.text  # no "user: " written into the text
    finally:
        mem.close()
    again = CliRunner().invoke(bench_app, args)
    assert again.exit_code == 0, again.output
    res = json.loads((out / "convo-assistant-zh.json").read_text(encoding="utf-8"))
    assert res["ingest"]["messages"] == 0  # the kept store is reused
