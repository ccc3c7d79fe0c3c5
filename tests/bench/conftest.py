"""A tiny LoCoMo-shaped file, written in the test (the real dataset is never used here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAMPLE = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Ana",
                    "dia_id": "D1:1",
                    "text": "Hi Ben! I adopted a puppy named Rex.",
                },
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! I started pottery class."},
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "Look at him!",
                    "img_url": ["http://x"],
                    "blip_caption": "a photo of a brown dog on a sofa",
                    "query": "puppy",
                },
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I moved to Lisbon last week."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Lisbon is lovely, enjoy the tiles."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "My pottery teacher is Maria."},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ana's puppy?",
                "answer": "Rex",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where did Ben move?",
                "answer": "Lisbon",
                "evidence": ["D2:1; D2:2"],
                "category": 1,
            },
            {
                "question": "When did Ben move to Lisbon?",
                "answer": "June 2023",
                "evidence": ["D:2:1", "D2:"],
                "category": 2,
            },
            {"question": "Who teaches Ben pottery?", "answer": 1234, "evidence": [], "category": 3},
            {
                "question": "What did Ana's cat do?",
                "adversarial_answer": "slept",
                "evidence": ["D1:1"],
                "category": 5,
            },
        ],
    }
]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps(SAMPLE), encoding="utf-8")
    return path
