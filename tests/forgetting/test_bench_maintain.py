"""``bench locomo --maintain`` with ``--store-dir``: the pass runs on a reused store too
(it used to run only right after an ingest), on a copy, so the kept store stays as
ingested and runs with and without ``--maintain`` measure the same ingest."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from memstrata.bench.locomo.dataset import load_locomo
from memstrata.bench.locomo.runner import LocomoConfig, run_locomo

SAMPLE = [
    {
        "sample_id": "conv-m",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What breed is he?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "A beagle, very loud."},
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I moved to Lisbon last week."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Lisbon is lovely."},
            ],
        },
        "qa": [
            {
                "question": "What is Ana's puppy called?",
                "answer": "Rex",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where did Ben move?",
                "answer": "Lisbon",
                "evidence": ["D2:1"],
                "category": 1,
            },
        ],
    }
]


def _digest(db: Path) -> str:
    with sqlite3.connect(db) as conn:  # the rows, whatever the page layout
        rows = conn.execute("SELECT id, version, status FROM records ORDER BY id").fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_maintain_runs_on_a_reused_store_and_keeps_it(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(SAMPLE), encoding="utf-8")
    convs = load_locomo(data)
    kept = tmp_path / "stores"
    base = {"embedder": "hashing", "store": "sqlite", "mem0": False, "pool": 10}
    first = run_locomo(convs, LocomoConfig(store_dir=str(kept), **base))  # type: ignore[arg-type]
    assert first["ingest"]["messages"] == 5
    assert not any("maintenance" in n for n in first["notes"])
    before = _digest(kept / "conv-m.db")

    cfg = LocomoConfig(store_dir=str(kept), maintain="default", maintain_after_days=30, **base)  # type: ignore[arg-type]
    second = run_locomo(convs, cfg)
    assert second["ingest"]["messages"] == 0  # the store was reused
    notes = [n for n in second["notes"] if n.startswith("maintenance (default, ingest + 30 days)")]
    assert len(notes) == 1 and "'scanned'" in notes[0], second["notes"]
    assert _digest(kept / "conv-m.db") == before  # the kept store is as ingested
    assert not (kept / "conv-m.maintained.db").exists()
