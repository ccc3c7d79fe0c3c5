"""Lexical terms for BM25, in every script.

Chinese runs are segmented with jieba (``rjieba``, in search mode so compound words also
yield their parts); other runs are split on word characters, lower-cased, stripped of
English stop words and Snowball-stemmed (English rules: other Latin and Cyrillic words
mostly pass unchanged). Korean, Japanese kana, Thai, Lao, Khmer and Myanmar runs become
overlapping bigrams and marks stay inside Indic, Arabic, Hebrew … words
(:mod:`memstrata.search.scripts`). Latin and Greek letters lose their diacritics first
(:func:`memstrata.search.scripts.fold`: "Zoë" and "Zoe" both give ``zoe``, "naïve" is
stemmed as "naive"). The same function makes document terms and query terms, so they
meet. ASCII text, and any text without those scripts and accents, gets exactly the terms
it got before schema 11 (the classic path below, unchanged).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from memstrata.search import scripts
from memstrata.traces import keeps_words

__all__ = ["tokenize", "tokenize_v10", "tokenize_v14"]

_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+|\w+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")

_EN_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve y o im ive dont didnt doesnt isnt wasnt cant wont also really yeah oh ok
    okay hey hi hello like just got get gets lot lots thing things""".split()
)
# Function words and question words, the counterpart of the English list (which drops
# "what", "when", "now", "which", pronouns and auxiliaries): in a question they match most of
# a user's messages, cost the most to score and add almost nothing to the ranking.
_ZH_STOP = frozenset(
    "的 地 得 了 着 过 是 我 你 您 他 她 它 们 我们 你们 他们 她们 咱们 自己 在 和 与 跟 同 就 都 "
    "而 及 也 很 吗 呢 吧 啊 呀 哦 嗯 哈 这 那 这个 那个 这些 那些 这样 那样 个 一个 有 没 没有 不 "
    "要 会 能 可以 应该 说 对 把 被 让 给 从 到 之 其 或 并 但 还 又 再 才 刚 已经 现在 啦 么 "
    "什么 哪 哪个 哪些 哪里 哪儿 谁 怎么 怎样 怎么样 为什么 多少 几 时候 什么时候 如何 是否 "
    "，。！？、；：“”‘’（）《》".split()
)

# Hindi function words (postpositions, auxiliaries, pronouns, question words), as the
# English list drops theirs: they are in most messages and rank nothing. Only words of
# the multi-script path are looked up here (Devanagari is never on the classic path).
_HI_STOP = frozenset(
    "है हैं हूँ हो था थी थे में से की का के को और पर भी तो ही ने यह वह ये वे कि जो क्या कब "
    "कहाँ कैसे कैसा कैसी कौन क्यों मैं तुम आप हम मुझे मेरा मेरी मेरे तुम्हें तुम्हारा तुम्हारी "
    "तुम्हारे हमारा हमारी हमारे उसका उसकी उसके एक इस उस रहा रही रहे".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@keeps_words
def _forget_stems() -> None:
    """Empty the stemmer's own cache of the words it stemmed (users' words): setting its
    size to 0 empties it."""
    if _stemmer.cache_info().currsize:
        stemmer = _stemmer()
        size = stemmer.maxCacheSize
        stemmer.maxCacheSize = 0
        stemmer.maxCacheSize = size


def _cut(run: str) -> list[str]:
    import rjieba

    return [w for w in rjieba.cut_for_search(run) if w.strip()]


def tokenize(text: str) -> list[str]:
    """Terms of ``text`` for lexical search (may be empty for stop-word-only text)."""
    norm = unicodedata.normalize("NFKC", text).lower()
    if norm.isascii():
        return _classic(norm)
    norm = scripts.fold(norm)
    if scripts.special(norm):
        return _multiscript(norm)
    return _classic(norm)


def tokenize_v14(text: str) -> list[str]:
    """The terms :func:`tokenize` gave from schema 11 to SQLite's schema 14 (PostgreSQL's
    16), accents kept: what the accent-folding migrations recognise in the index."""
    norm = unicodedata.normalize("NFKC", text).lower()
    if not norm.isascii() and scripts.special(norm):
        return _multiscript(norm)
    return _classic(norm)


def tokenize_v10(text: str) -> list[str]:
    """The terms :func:`tokenize` gave up to schema 10 (Hangul and kana to jieba, marks
    separating): what the schema 11 migrations recognise in the index."""
    return _classic(unicodedata.normalize("NFKC", text).lower())


def _classic(norm: str) -> list[str]:
    latin: list[str] = []
    out: list[str] = []
    for match in _RUN.finditer(norm):  # for text without special scripts: CJK is Chinese
        run = match.group(0)
        if _CJK.match(run):
            out.extend(w for w in _cut(run) if w not in _ZH_STOP)
        else:
            for part in run.split("_"):
                if part and part not in _EN_STOP:
                    latin.append(part)
    if latin:
        out.extend(_stemmer().stemWords(latin))
    return out


def _multiscript(norm: str) -> list[str]:
    """:func:`tokenize` of a text holding Hangul, kana, a space-less script or a letter
    that may carry marks: Chinese and other words as on the classic path, the rest by
    :mod:`.scripts`."""
    latin: list[str] = []
    out: list[str] = []
    for match in scripts.runs().finditer(scripts.keep_marks(norm)):
        run = match.group(0)
        kind = match.lastgroup
        if kind == "han":
            out.extend(w for w in _cut(run) if w not in _ZH_STOP)
        elif kind == "hangul":
            out.extend(scripts.hangul_terms(run))
        elif kind == "kana":
            out.extend(scripts.kana_terms(run))
        elif kind == "spaceless":
            out.extend(scripts.spaceless_terms(run))
        else:
            latin.extend(p for p in run.split("_") if p and p not in _EN_STOP and p not in _HI_STOP)
    if latin:
        out.extend(_stemmer().stemWords(latin))
    return out
