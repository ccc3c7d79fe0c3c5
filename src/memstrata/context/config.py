"""How ``build_context`` chooses what to show.

Every lever here was measured on LoCoMo and on the synthetic conversational set
(``memstrata bench locomo`` / ``bench convo``, English and Chinese). ``resolve_dates``,
``compact_dates``, ``digest_share``, ``tokens_per_candidate``, ``question_penalty``,
``reaction_penalty``, ``answer_type_boost``, ``fact_step``,
``assistant_penalty`` and ``trim_turns_over`` helped or tied on all of them (docs/measurements.md,
"Context quality"; the last two were measured on the user-assistant style of the synthetic set
and change nothing where every turn is stored as the user's), so they are on by default;
the others did not help on every set and are opt-in:
``Memory.context_config = ContextConfig(neighbour_hits=10, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Literal

from ..errors import ValidationError

__all__ = ["ContextConfig", "local"]


@dataclass(frozen=True, slots=True)
class ContextConfig:
    # Profile facts: "search" = facts compete in the one hybrid search with everything else
    # (and the query is embedded once); "similar" = a separate vector search for facts,
    # scored apart from the hits (``fact_step``), so the profile's best facts show whatever
    # the question (junk facts took ~270 of 1,000 tokens on LoCoMo before the extractor's
    # precision fix); "off" = none.
    facts: Literal["search", "similar", "off"] = "similar"
    # With facts="similar", a profile fact scores 0.6 − fact_step × its rank (at least 0.2),
    # the facts sharing a term with the question first, then the most similar to it
    # (context/fact_rank.py): the tail of a large profile ranks below the relevant turns.
    # 0.01 (the rank only breaking ties, as before) left LoCoMo's 4–26 heuristic facts
    # ~180 of a 1,000-token context (docs/measurements.md, "Issue 13, sixteenth session").
    fact_step: float = 0.05
    # A fact whose source turns are all candidates repeats them (off: a candidate turn may
    # still be cut by the budget, and then the fact was the only copy).
    skip_facts_shown: bool = False
    # Relevant past turns grouped under one date line per day instead of a date on each line
    # (the tokens saved carry more turns).
    compact_dates: bool = True
    # Summaries/episodes/clusters found by the search: "keep" = shown as they are; "expand" =
    # replaced by their source turns (scored ``digest_weight`` × the digest's score), which
    # then compete turn by turn; "off" = left out.
    digests: Literal["keep", "expand", "off"] = "keep"
    digest_weight: float = 0.5
    # Each of the best ``neighbour_hits`` turn hits brings the turn before it (the question
    # it answers) and, when it asks something, the turn after it (the answer), scored
    # ``neighbour_weight`` × the hit's score.
    neighbour_hits: int = 0
    neighbour_weight: float = 0.5
    # Turns of the sessions where the best hits are get up to this much added to their score.
    session_boost: float = 0.0
    # Dates in the question ("in May 2023", "last May", "2023年5月") resolved against the
    # newest date in the hits: turns from that period are searched for as well and boosted.
    temporal_boost: float = 0.0
    # Newest summaries as background filler (they only use what relevant memories leave).
    background_summaries: bool = True
    # Relative dates in shown turns ("yesterday", "last Saturday", "上个月") followed by the
    # date they mean, resolved against the date the turn was said (context/relative.py).
    resolve_dates: bool = True
    # Key memory promoted automatically from hot clusters (user-set key memory always shows).
    auto_key: bool = True
    # Search hits asked for: one per this many tokens of budget (at least 30, at most 300),
    # so short turns still fill the budget once digests are set aside (25 before: on the
    # synthetic set ~40% of a 1,000-token budget stayed empty once digests were bounded).
    tokens_per_candidate: int = 10
    # For a question about a detail (not a request for an overview: budget.asks_overview),
    # the most of the memory share that digests (summaries, clusters, episodes) may take;
    # 1.0 = no limit. Unbounded, summaries found by the search took 40-80% of the budget
    # (an extractive summary repeats ten rounds' sentences at ~260 tokens).
    digest_share: float = 0.15
    # Mid-term clusters offered by centroid similarity (PMemo's top-k), at ``cluster_score``
    # (fused scores of turns run ~1.0 down to ~0.3, so 0.1 fills what turns leave), instead
    # of competing in the fused search: with clusters calibrated per embedder (~90 per
    # conversation), their centroids outranked the turns that hold answers there.
    clusters: int = 3
    cluster_score: float = 0.1
    clusters_in_search: bool = False
    # A turn's score minus this × the share of it that only asks (context/question_turns.py):
    # question-shaped turns rank high for a question and rarely hold its answer. Helped or
    # tied on LoCoMo and both synthetic sets (docs/measurements.md, "Issue 13, ninth session").
    question_penalty: float = 0.3
    # A turn's score minus this × the share of it that only reacts to the other speaker
    # ("Wow Nate! Congrats on winning!", "So proud of you!"; context/reactions.py). 0.1
    # helped or tied on LoCoMo's held-out half and both synthetic sets (79.0 / 83.8 / 87.6
    # -> 79.3 / 84.0 / 88.2 on LoCoMo; docs/measurements.md, "Session 33").
    reaction_penalty: float = 0.1
    # A turn holding what the question asks for — a date for "when", a number for "how
    # many", a name for "which / what / who" — scores this much higher
    # (context/answer_types.py). With reaction_penalty=0.1 it took LoCoMo from 79.3 / 84.0 /
    # 88.2 to 80.2 / 84.8 / 88.6 (conversations 5-9, not read to build it: 79.3 / 84.6 / 88.7
    # to 80.0 / 85.5 / 89.6), the synthetic English set from 93.1 / 98.6 / 100 to 93.8 /
    # 98.6 / 100 and the Chinese one from 91.7 / 97.2 / 99.3 to 92.4 / 97.9 / 99.3 at 1k /
    # 2k / 4k tokens, once a name said alone ("Mochi. My niece picked it.") was read as one
    # (docs/measurements.md, "Session 34").
    answer_type_boost: float = 0.2
    # An assistant's turn (Role.ASSISTANT) scores this much lower unless the question speaks
    # to the assistant ("you", 你): what the user is asked about, the user said
    # (context/roles.py). Turns stored as the user's are never affected. With trim_turns_over
    # it took the user-assistant synthetic set from 82.0 / 86.8 / 87.7 to 94.7 / 99.1 / 100
    # (English) and 80.1 / 78.9 / 82.7 to 99.1 / 100 / 100 (Chinese) at 1k / 2k / 4k tokens
    # (docs/measurements.md, "Issue 13, tenth session").
    assistant_penalty: float = 0.5
    # An assistant's turn longer than this many tokens is shown as its sentences sharing a
    # word with the question, "…" for the rest, unless the question speaks to the assistant
    # (context/trim.py); 0 = turns are shown whole. The user's turns are never cut.
    trim_turns_over: int = 80
    # A turn said by someone the question does not name scores this much lower when the
    # question names one of the people who spoke (context/speakers.py).
    speaker_penalty: float = 0.0
    # The time zone the user's days are counted in (``ZoneInfo("Pacific/Kiritimati")``,
    # ``timezone(timedelta(hours=5, minutes=45))``): the dates and times shown beside
    # memories and turns, a turn's relative dates ("yesterday", "last Saturday") and the
    # period a question names ("last May") are read in it. None: UTC, as a store keeps every
    # time (the offset of an ``observed_at`` a caller gave is not kept): at +14:00,
    # "yesterday" said at 08:00 on 2 May was read as 30 April (session 31).
    time_zone: tzinfo | None = None

    def __post_init__(self) -> None:
        if self.time_zone is not None:
            try:
                datetime(2000, 1, 1, tzinfo=UTC).astimezone(self.time_zone)
            except Exception:  # noqa: BLE001 - a tzinfo of the caller's that fails to convert
                raise ValidationError(
                    "ContextConfig.time_zone must be a datetime.tzinfo such as "
                    "zoneinfo.ZoneInfo('Europe/Paris') or datetime.timezone(timedelta(hours=2)), "
                    f"or None for UTC; got {self.time_zone!r}"
                ) from None
        if self.facts not in ("search", "similar", "off"):
            raise ValidationError("ContextConfig.facts must be 'search', 'similar' or 'off'")
        if self.digests not in ("keep", "expand", "off"):
            raise ValidationError("ContextConfig.digests must be 'keep', 'expand' or 'off'")
        for name in (
            "digest_weight",
            "neighbour_weight",
            "session_boost",
            "temporal_boost",
            "question_penalty",
            "reaction_penalty",
            "answer_type_boost",
            "assistant_penalty",
            "speaker_penalty",
            "fact_step",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 10.0:
                raise ValidationError(f"ContextConfig.{name} must be in [0, 10], got {value!r}")
        if self.neighbour_hits < 0:
            raise ValidationError("ContextConfig.neighbour_hits must be >= 0")
        if not 0 <= self.clusters <= 100:
            raise ValidationError(
                f"ContextConfig.clusters must be in [0, 100], got {self.clusters!r}"
            )
        if not 0.0 <= self.cluster_score <= 10.0:
            raise ValidationError(
                f"ContextConfig.cluster_score must be in [0, 10], got {self.cluster_score!r}"
            )
        if not 1 <= self.tokens_per_candidate <= 1000:
            raise ValidationError(
                f"ContextConfig.tokens_per_candidate must be in [1, 1000], got "
                f"{self.tokens_per_candidate!r}"
            )
        if not 0 <= self.trim_turns_over <= 100_000:
            raise ValidationError(
                f"ContextConfig.trim_turns_over must be in [0, 100000], got "
                f"{self.trim_turns_over!r}"
            )
        if not 0.0 <= self.digest_share <= 1.0:
            raise ValidationError(
                f"ContextConfig.digest_share must be in [0, 1], got {self.digest_share!r}"
            )

    @classmethod
    def before(cls) -> ContextConfig:
        """The behaviour before the levers (for before/after measurements): every lever off."""
        return cls(
            facts="similar",
            fact_step=0.01,
            skip_facts_shown=False,
            compact_dates=False,
            digests="keep",
            neighbour_hits=0,
            session_boost=0.0,
            temporal_boost=0.0,
            resolve_dates=False,
            tokens_per_candidate=25,
            digest_share=1.0,
            clusters=0,
            clusters_in_search=True,
            question_penalty=0.0,
            reaction_penalty=0.0,
            answer_type_boost=0.0,
            assistant_penalty=0.0,
            trim_turns_over=0,
        )


def local(when: datetime, config: ContextConfig) -> datetime:
    """``when`` in ``config.time_zone``; as it is when that is None (a store's UTC)."""
    zone = config.time_zone
    return when if zone is None else when.astimezone(zone)
