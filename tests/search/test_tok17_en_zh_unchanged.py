"""English and Chinese text gets exactly the terms it got before tok17 (schema 10).

The tokenizer of commit daa18de is kept below, word for word, and compared with
:func:`tokenize` over the synthetic bench sets (English and Chinese, messages, queries and
conversations), mixed Latin/Chinese strings and random text of those scripts. Since fold24
a text holding an accented Latin or Greek letter gets folded terms
(:func:`memstrata.search.scripts.may_fold`); :func:`tokenize_v14`, which the accent
migrations read the index by, still gives daa18de's terms for it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.bench.convo.assistant import generate_assistant
from memstrata.bench.convo.generate import generate
from memstrata.bench.synth import synth_messages, synth_messages_zh, synth_queries, synth_queries_zh
from memstrata.search.scripts import may_fold
from memstrata.search.tokenize import tokenize, tokenize_v10, tokenize_v14

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
_ZH_STOP = frozenset(
    "的 地 得 了 着 过 是 我 你 您 他 她 它 们 我们 你们 他们 她们 咱们 自己 在 和 与 跟 同 就 都 "
    "而 及 也 很 吗 呢 吧 啊 呀 哦 嗯 哈 这 那 这个 那个 这些 那些 这样 那样 个 一个 有 没 没有 不 "
    "要 会 能 可以 应该 说 对 把 被 让 给 从 到 之 其 或 并 但 还 又 再 才 刚 已经 现在 啦 么 "
    "什么 哪 哪个 哪些 哪里 哪儿 谁 怎么 怎样 怎么样 为什么 多少 几 时候 什么时候 如何 是否 "
    "，。！？、；：“”‘’（）《》".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def _cut(run: str) -> list[str]:
    import rjieba

    return [w for w in rjieba.cut_for_search(run) if w.strip()]


def old_tokenize(text: str) -> list[str]:
    """``memstrata.search.tokenize.tokenize`` as of daa18de (schema 10)."""
    norm = unicodedata.normalize("NFKC", text).lower()
    latin: list[str] = []
    out: list[str] = []
    for match in _RUN.finditer(norm):
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


def _corpus() -> list[str]:
    texts: list[str] = [m.content for m in synth_messages(3000, 5)]
    texts += [m.content for m in synth_messages_zh(3000, 5)]
    texts += synth_queries(300) + synth_queries_zh(300)
    for lang in ("en", "zh"):
        for conv in generate(lang, conversations=3) + generate_assistant(lang, conversations=3):
            texts += [t.text for t in conv.turns]
            texts += [q.question for q in conv.questions] + [q.answer for q in conv.questions]
    texts += [
        "用iPhone拍照",
        "iphone使用说明",
        "我在Google工作了3年",
        "café naïve résumé Zoë",
        "Привет, как дела? Я люблю книги",
        "Ich habe die Bücher gelesen",
        "x_y__z 2024-05-01",
        "e\u0301 q\u0303 n\u0308 1\ufe0f\u20e3 ❤️ 👍🏽",
        "ＡＢＣ１２３ 全角",
        "Ⅻ ① ﬁ ㎏",
        "中文，标点！还有“引号”和（括号）",
        "Ελληνικά κείμενα",
        "what's up? I'm fine :)",
    ]
    return texts


def test_english_and_chinese_terms_are_unchanged() -> None:
    corpus = _corpus()
    assert len(corpus) > 6000
    differ = [t for t in corpus if tokenize(t) != old_tokenize(t)]
    assert differ == [t for t in corpus if may_fold(t)] and len(differ) < 100
    assert [t for t in corpus if tokenize_v14(t) != old_tokenize(t)] == []


_EN_ZH = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x24F),
        st.characters(min_codepoint=0x370, max_codepoint=0x52F),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        st.characters(min_codepoint=0x3000, max_codepoint=0x303F),
        st.characters(min_codepoint=0xFF00, max_codepoint=0xFF5E),
        st.characters(min_codepoint=0x300, max_codepoint=0x36F),  # marks after Latin
        st.sampled_from(list("的了是我你他在和 .,!?_-'\n\t")),
    ),
    max_size=80,
)


@settings(max_examples=400, deadline=None)
@given(_EN_ZH)
def test_random_latin_cyrillic_greek_chinese_text_is_unchanged(text: str) -> None:
    assert tokenize_v14(text) == old_tokenize(text)
    if not may_fold(text):
        assert tokenize(text) == old_tokenize(text)


def test_the_migrations_old_tokenizer_is_the_old_one() -> None:
    """``tokenize_v10`` (what the schema 11 migrations read the index by) is daa18de's
    tokenizer for every script, the ones whose terms changed included."""
    from tok17_texts import OTHER, PAIRS

    texts = _corpus()[:500] + [t for pairs in PAIRS.values() for p in pairs for t in p]
    texts += [t for ts in OTHER.values() for t in ts]
    assert [tokenize_v10(t) for t in texts] == [old_tokenize(t) for t in texts]
