"""The offline default LLM: extractive, pattern-based, deterministic and instant.

It never invents anything: summaries are chosen sentences of the input, facts are explicit
first-person statements, importance is a transparent sum of signals. Good enough to run
memory with no model at all, and the fallback whenever an endpoint-backed LLM fails.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from ._language import is_cjk, split_sentences, truncate_words, word_count
from .base import ExtractedFact, Reflection, TaskOutcome
from .fact_patterns import extract_explicit_facts

__all__ = ["HeuristicLLM"]

_STOPWORD_TEXT = (
    "a an the and or but if of to in on at for with by from as is are was were be been am "
    "i you he she it we they me my your our their this that these those do does did have has "
    "had not no so too very just can will would should could there here what which who how "
    "的 了 是 在 我 你 他 她 它 们 和 也 就 都 很 吗 呢 吧 啊 这 那 有 个"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Whole messages (lower-cased, punctuation removed) that carry nothing to remember.
_ACK_TEXT = (
    "ok,okay,ok thanks,okay thanks,ok thank you,thanks,thank you,thx,ty,got it,sure,yes,no,"
    "yep,nope,cool,nice,great,lol,haha,hi,hello,hey,bye,good morning,good night,alright,k,"
    "kk,np,no problem,sounds good,好,好的,好吧,谢谢,多谢,嗯,嗯嗯,收到,哈哈,哈哈哈,知道了,"
    "没问题,你好,再见,行,可以,对,好的谢谢"
)
_ACKS = frozenset(_ACK_TEXT.split(","))
_EN_TOKEN = re.compile(r"[a-z0-9']+")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_REMEMBER = re.compile(
    r"\b(?:remember|don't forget|do not forget|important|never forget|keep in mind|note that"
    r"|always|never)\b|记住|记得|别忘|不要忘|重要|务必|一定要|永远不要",
    re.IGNORECASE,
)
_DATE_OR_NUMBER = re.compile(
    r"\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|"
    r"march|april|june|july|august|september|october|november|december|tomorrow|tonight|"
    r"next week|yesterday)\b|[年月日号周]|明天|后天|下周|昨天",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_KEY_INFO = re.compile(
    r"\b(?:must|must not|deadline|due|by (?:monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|tomorrow|tonight|the end|end of|next|\d)|need to|needs to|have to|"
    r"has to|goal|objective|requirement|required|constraint|should not|shouldn't|cannot|"
    r"can't|no later than|before|budget|limit|at most|at least|only)\b"
    r"|必须|截止|目标|需要|要求|限制|不能|不得|最晚|之前|预算|务必|至少|最多|只能",
    re.IGNORECASE,
)


def _terms(sentence: str) -> list[str]:
    """Content words for Latin text, character bigrams for Chinese runs."""
    lower = sentence.lower()
    terms = [w for w in _EN_TOKEN.findall(lower) if w not in _STOPWORDS and len(w) > 1]
    for run in _CJK_RUN.findall(sentence):
        chars = [c for c in run if c not in _STOPWORDS]
        terms.extend(a + b for a, b in zip(chars, chars[1:], strict=False))
        if len(chars) == 1:
            terms.append(chars[0])
    return terms


def _step_lessons(task: TaskOutcome, zh: bool) -> list[str]:
    """Lessons that follow the steps' statuses: only completed steps "worked"; a failure
    names the step that failed (or the one it stopped at)."""
    steps = [s.strip() for s in task.steps if s.strip()]
    done = task.steps_with("completed")
    if steps and not task.step_statuses:  # statuses not tracked: claim nothing about them
        return [
            ("计划（步骤状态未记录）：" if zh else "Plan (step statuses not recorded): ")
            + " → ".join(steps[:6])
        ]
    if task.success:
        if done:
            return [("有效的做法：" if zh else "What worked: ") + " → ".join(done[:6])]
        if steps:
            return [
                "任务标记为成功，但计划中的步骤都未完成；计划可能需要修改"
                if zh
                else "Marked succeeded, but no planned step was completed; the plan may not "
                "reflect what was actually done"
            ]
        return []
    if not steps:
        return [
            "任务失败，需要先制定计划"
            if zh
            else "The task failed without recorded steps; plan before acting"
        ]
    failed = task.steps_with("failed")
    unfinished = task.steps_with("in_progress") or task.steps_with("pending")
    if failed:
        at, verb = failed[0], ("失败于" if zh else "failed at")
    elif unfinished:
        at, verb = unfinished[0], ("停在" if zh else "stopped at")
    else:  # every step completed, yet the task failed: the plan itself fell short
        return [
            "所有步骤都完成了但任务仍然失败，需要不同的计划"
            if zh
            else "Every step was completed but the task still failed; a different plan is needed"
        ]
    lessons = [
        f"做法{verb}「{at}」，下次换一种做法"
        if zh
        else f"The approach {verb} '{at}'; try another way next time"
    ]
    if done:
        lessons.append(
            ("失败前已完成：" if zh else "Completed before failing: ") + " → ".join(done[:6])
        )
    return lessons


class HeuristicLLM:
    """Implements :class:`~memstrata.llm.base.LLM` without any model."""

    @property
    def name(self) -> str:
        return "heuristic"

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        """Extractive: the most central sentences, in their original order.

        A sentence scores the mean corpus frequency of its terms (centrality) plus a bonus
        for coming early in its text (position); sentences are taken best-first while they
        fit in ``max_words`` (CJK characters count 1/1.5 words).
        """
        if max_words < 1:
            return ""
        sentences: list[tuple[int, str, float]] = []  # (order, sentence, position bonus)
        for text in texts:
            parts = split_sentences(text)
            for i, sentence in enumerate(parts):
                sentences.append((len(sentences), sentence, 0.3 / (1 + i)))
        if not sentences:
            return ""
        tf = Counter(t for _, s, _ in sentences for t in _terms(s))
        top = max(tf.values(), default=1)

        def score(sentence: str, bonus: float) -> float:
            terms = _terms(sentence)
            if not terms:
                return bonus * 0.5
            centrality = sum(tf[t] for t in terms) / (len(terms) * top)
            return centrality + bonus + 0.05 * math.log1p(len(terms))

        ranked = sorted(sentences, key=lambda item: -score(item[1], item[2]))
        chosen: list[tuple[int, str]] = []
        used = 0.0
        for order, sentence, _ in ranked:
            words = word_count(sentence)
            if used + words <= max_words:
                chosen.append((order, sentence))
                used += words
        if not chosen:  # even the best sentence is too long: cut it
            best = ranked[0]
            return truncate_words(best[1], max_words)
        chosen.sort()
        parts = [s for _, s in chosen]
        joiner = "" if is_cjk("".join(parts)) else " "
        return joiner.join(parts)

    def extract_facts(self, texts: Sequence[str]) -> list[ExtractedFact]:
        return extract_explicit_facts(texts)

    def score_importance(self, text: str) -> float:
        """0.05 for acknowledgements; otherwise 0.2 plus signals.

        +0.35 an explicit fact or preference, +0.25 "remember"/"important"/记住/重要,
        +0.1 a date or number, +0.1 a named entity, up to +0.15 for length; capped at 1.
        """
        stripped = text.strip()
        norm = re.sub(r"[\s!.,?！。，？~]+", " ", stripped.lower()).strip()
        if not norm or norm in _ACKS or all(part in _ACKS for part in norm.split()):
            return 0.05
        score = 0.2
        if extract_explicit_facts([stripped]):
            score += 0.35
        if _REMEMBER.search(stripped):
            score += 0.25
        if _DATE_OR_NUMBER.search(stripped):
            score += 0.1
        if _ENTITY.search(stripped):
            score += 0.1
        score += min(0.15, word_count(stripped) / 200)
        if word_count(stripped) <= 3 and score < 0.4:
            score = min(score, 0.15)  # very short, signal-free chatter
        return round(min(1.0, score), 4)

    def reflect(self, task: TaskOutcome) -> Reflection:
        zh = is_cjk(task.goal + task.outcome + task.feedback)
        steps = [s.strip() for s in task.steps if s.strip()]
        if zh:
            status = "成功" if task.success else "失败"
            summary = f"任务{status}：{task.goal}" + (
                f"。结果：{task.outcome}" if task.outcome else ""
            )
        else:
            status = "Succeeded" if task.success else "Failed"
            summary = f"{status}: {task.goal}" + (
                f". Outcome: {task.outcome}" if task.outcome else ""
            )
        lessons = _step_lessons(task, zh)
        if task.feedback.strip():
            lessons.append(("用户反馈：" if zh else "User feedback: ") + task.feedback.strip())
        if task.tools:
            lessons.append(("使用的工具：" if zh else "Tools used: ") + ", ".join(task.tools))
        importance = 0.5 if task.success else 0.7
        if task.feedback.strip():
            importance += 0.15
        done = task.steps_with("completed")
        if task.success and steps and task.step_statuses and not done:
            summary += (
                "（计划中的步骤都未完成）" if zh else " (no planned step was marked completed)"
            )
        decisions = done if task.step_statuses else steps
        return Reflection(
            summary=summary[:2000],
            key_decisions=decisions[:5],
            lessons=lessons,
            importance=min(1.0, importance),
        )

    def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        """Field-wise; incoming wins, except that a blank incoming value erases nothing."""
        merged = dict(current)
        merged.update({k: v for k, v in incoming.items() if v.strip()})
        return merged

    def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        """Sentences stating goals, constraints or deadlines, once each, in order."""
        found: list[str] = []
        for text in texts:
            for sentence in split_sentences(text):
                if _KEY_INFO.search(sentence) and sentence not in found:
                    found.append(sentence)
        return found
