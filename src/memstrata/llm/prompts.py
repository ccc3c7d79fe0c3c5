"""Prompt builders and response schemas for every LLM task (pure functions, no I/O).

Each builder returns chat messages asking for one strict JSON object matching a pydantic
model; :class:`~memstrata.llm.chat.PromptedLLM` validates the answer against that model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from .base import ExtractedFact, Reflection, TaskOutcome

__all__ = [
    "FactsResponse",
    "ImportanceResponse",
    "KeyInfoResponse",
    "Messages",
    "ProfileResponse",
    "SummaryResponse",
    "extract_facts_prompt",
    "key_info_prompt",
    "merge_profile_prompt",
    "reflect_prompt",
    "retry_message",
    "score_importance_prompt",
    "summarize_prompt",
]

Messages = list[dict[str, str]]


class SummaryResponse(BaseModel):
    summary: str


class FactsResponse(BaseModel):
    facts: list[ExtractedFact]


class ImportanceResponse(BaseModel):
    importance: float = Field(ge=0.0, le=1.0)


class ProfileResponse(BaseModel):
    profile: dict[str, str]


class KeyInfoResponse(BaseModel):
    items: list[str]


_SYSTEM = (
    "You are the memory component of an AI assistant. Answer with one JSON object only, "
    "no prose and no code fences, matching this JSON schema:\n{schema}"
)
_SAME_LANGUAGE = (
    "Write every value in the same language as the user's text (Chinese stays "
    "Chinese, English stays English); never translate."
)


def _messages(schema: type[BaseModel], user: str) -> Messages:
    return [
        {
            "role": "system",
            "content": _SYSTEM.format(
                schema=json.dumps(schema.model_json_schema(), ensure_ascii=False)
            ),
        },
        {"role": "user", "content": user},
    ]


def _numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {t}" for i, t in enumerate(texts, 1))


def summarize_prompt(texts: Sequence[str], max_words: int) -> Messages:
    return _messages(
        SummaryResponse,
        (
            f"Summarise the texts below in at most {max_words} words (for Chinese, count 1.5 "
            f"characters as one word). Keep names, numbers, dates and decisions. "
            f"{_SAME_LANGUAGE}\n\nTexts:\n{_numbered(texts)}"
        ),
    )


def extract_facts_prompt(texts: Sequence[str]) -> Messages:
    return _messages(
        FactsResponse,
        (
            "Extract facts and preferences the user states explicitly about themselves "
            "(identity, location, work, likes, dislikes, allergies, relations, pets, dates). "
            "Never infer or guess. category: one of identity, preference, health, relation, "
            "other. key: a short snake_case English identifier such as favorite_drink. value: "
            "the user's own words. confidence: 0.0-1.0. evidence: the sentence it came from. "
            'replaces: an earlier value the user says this one replaces ("I stopped going '
            'to X"), else empty. ended: true only when the user says a value no longer '
            'holds and gives no new one ("I no longer live in Berlin": key location, value '
            "Berlin, ended true). "
            f'{_SAME_LANGUAGE} Return {{"facts": []}} if there are none.\n\n'
            f"Texts:\n{_numbered(texts)}"
        ),
    )


def score_importance_prompt(text: str) -> Messages:
    return _messages(
        ImportanceResponse,
        (
            "Rate from 0.0 to 1.0 how important it is for an assistant to remember this "
            "message long-term. High: stated preferences, identity, commitments, deadlines, "
            "explicit requests to remember. Low: greetings, acknowledgements, small talk.\n\n"
            f"Message:\n{text}"
        ),
    )


def reflect_prompt(task: TaskOutcome) -> Messages:
    return _messages(
        Reflection,
        (
            "Reflect on this finished task for future runs: a one-paragraph summary, the key "
            "decisions, and concrete lessons (what to repeat, what to avoid). step_statuses "
            "gives each step's final status: only completed steps worked; never present a "
            "pending, in_progress or failed step as having worked. importance in "
            f"[0, 1]: failures and user feedback matter more. {_SAME_LANGUAGE}\n\n"
            f"Task:\n{task.model_dump_json(indent=2)}"
        ),
    )


def merge_profile_prompt(current: Mapping[str, str], incoming: Mapping[str, str]) -> Messages:
    return _messages(
        ProfileResponse,
        (
            "Merge these two user profiles field by field. When both have a field, the "
            "incoming value wins. Merge fields that mean the same thing under one key. Keep "
            f"every other field unchanged. {_SAME_LANGUAGE}\n\n"
            f"Current:\n{json.dumps(dict(current), ensure_ascii=False)}\n\n"
            f"Incoming:\n{json.dumps(dict(incoming), ensure_ascii=False)}"
        ),
    )


def key_info_prompt(texts: Sequence[str]) -> Messages:
    return _messages(
        KeyInfoResponse,
        (
            "List the topic, goals, constraints and deadlines in these texts that must stay "
            "pinned in the assistant's memory, one short item each, quoting where possible. "
            f'{_SAME_LANGUAGE} Return {{"items": []}} if there are none.\n\n'
            f"Texts:\n{_numbered(texts)}"
        ),
    )


def retry_message(error: str) -> dict[str, str]:
    """The follow-up that asks the model to fix an answer that failed validation."""
    return {
        "role": "user",
        "content": (
            f"Your previous answer was invalid: {error[:1000]}\nReply again with only the "
            "corrected JSON object matching the schema."
        ),
    }
