"""The synthetic conversational set: deterministic, bilingual, and its gold data is right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.bench.cli import bench_app
from memstrata.bench.convo.generate import CATEGORY_NAMES, generate
from memstrata.bench.locomo.metrics import answer_recall, answer_tokens


def test_same_seed_same_set_and_languages_share_structure() -> None:
    en, en2, zh = generate("en", 2), generate("en", 2), generate("zh", 2)
    assert en == en2
    assert generate("en", 2, seed=5) != en
    for a, b in zip(en, zh, strict=True):
        assert [len(s.turns) for s in a.sessions] == [len(s.turns) for s in b.sessions]
        assert [q.evidence for q in a.questions] == [q.evidence for q in b.questions]
        assert [q.category for q in a.questions] == [q.category for q in b.questions]
    assert all(re.search(r"[\u4e00-\u9fff]", t.text) for t in zh[0].turns)


def test_shape_long_sessions_and_every_category() -> None:
    (conv,) = generate("en", 1)
    sizes = [len(s.turns) for s in conv.sessions]
    assert 18 <= len(sizes) <= 24 and sum(1 for n in sizes if n >= 80) >= 3
    assert {q.category for q in conv.questions} == set(CATEGORY_NAMES)
    times = [t.observed_at for t in conv.turns]
    assert times == sorted(times)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gold_answers_are_in_their_evidence(lang: str) -> None:
    for conv in generate(lang, 3):
        by_dia = {t.dia_id: t for t in conv.turns}
        sessions = {s.number: s for s in conv.sessions}
        for q in conv.questions:
            assert q.evidence and all(d in by_dia for d in q.evidence)
            text = " ".join(by_dia[d].text for d in q.evidence)
            if (
                q.category == 2
                and q.evidence[0] in by_dia
                and "reading" not in q.question
                and "读" not in q.question
            ):
                # a date answer: the session's date line (or a few days before it) holds it
                when = sessions[by_dia[q.evidence[0]].session].started_at
                assert (
                    answer_recall(q.answer, f"{when.year} {when:%B}")
                    or answer_recall(q.answer, f"{when.year}年{when.month}月")
                    or answer_recall(q.answer, f"{when.year}")
                )
                continue
            assert answer_recall(q.answer, text) == 1.0, (q, text)


def test_updates_ask_for_the_newest_value() -> None:
    for conv in generate("en", 4):
        by_dia = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            if q.question.startswith(("What does", "Where is", "Which restaurant")):
                assert q.category == 3
                newest = by_dia[q.evidence[-1]]
                assert answer_recall(q.answer, newest.text) == 1.0


def test_chinese_answer_tokens_are_bigrams() -> None:
    assert answer_tokens("2024年5月8日") == ["20", "02", "24", "4年", "年5", "5月", "月8", "8日"]
    assert answer_tokens("《纸月亮》") == ["纸月", "月亮"]
    assert answer_recall("芥末黄", "我们把客厅刷成了芥末黄。") == 1.0
    assert answer_recall("芥末黄", "我们把客厅刷成了浅绿色。") == 0.0
    assert answer_recall("50", "大概50个，比我们计划的多！") == 1.0
    assert answer_tokens("7 May 2023") == ["7", "may", "2023"]  # English unchanged


def test_unknown_language_is_an_error() -> None:
    with pytest.raises(ValueError, match="language"):
        generate("fr", 1)


def test_cli_convo_runs_both_languages(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench_app,
        [
            "convo",
            "--out",
            str(out),
            "--conversations",
            "1",
            "--embedder",
            "hashing",
            "--store-dir",
            str(tmp_path / "stores"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    for lang in ("en", "zh"):
        md = (out / f"convo-{lang}.md").read_text(encoding="utf-8")
        assert md.startswith("# Synthetic conversations")
        assert "memstrata build_context" in md
    # A second run reuses the kept stores: nothing is ingested again.
    again = CliRunner().invoke(
        bench_app,
        [
            "convo",
            "--out",
            str(out),
            "--conversations",
            "1",
            "--embedder",
            "hashing",
            "--store-dir",
            str(tmp_path / "stores"),
            "--lang",
            "en",
            "--json",
        ],
    )
    assert again.exit_code == 0, again.output
    import json

    res = json.loads((out / "convo-en.json").read_text(encoding="utf-8"))
    assert res["ingest"]["messages"] == 0
    assert res["methods"]["memstrata build_context"]["answer_recall"]["1000"]["all"]["n"] > 0


def test_last_weekday_gold_follows_each_language() -> None:
    """ "Last Saturday" is the latest Saturday before the day it is said; "上周六" is the
    Saturday of the previous calendar week (said on a Sunday, eight days back, not one)."""
    from datetime import datetime

    seen = {"en": 0, "zh": 0}
    for lang in ("en", "zh"):
        for conv in generate(lang, 8):
            by_dia = {t.dia_id: t for t in conv.turns}
            for q in conv.questions:
                turn = by_dia[q.evidence[0]]
                if q.category != 2 or not (
                    turn.text.startswith("Last ") or turn.text.startswith("上周")
                ):
                    continue
                fmt = "%d %B %Y" if lang == "en" else "%Y年%m月%d日"
                gold = datetime.strptime(q.answer, fmt).date()
                said = turn.observed_at.date()
                if lang == "en":
                    assert 1 <= (said - gold).days <= 7, (q, said)
                else:
                    monday = said.toordinal() - said.weekday()
                    assert monday - 7 <= gold.toordinal() < monday, (q, said)
                seen[lang] += 1
    assert seen["en"] and seen["zh"]
