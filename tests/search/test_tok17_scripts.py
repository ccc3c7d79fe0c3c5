"""Words of Korean, Japanese, Hindi, Thai, Lao … found by a search for them (tok17).

Until schema 11 these scripts were cut into noise: Hangul and kana into single characters
by jieba, Indic words at every vowel sign, Thai/Lao/Khmer/Myanmar clauses into one or a
few arbitrary pieces. Each case below failed on daa18de: a word ranked below a message
that only shares its letters, two words that differ by their vowel signs (or the order
of their kana) were the same terms, a word inside a Thai or Lao clause was not found.
Run through the public ``Memory`` API on SQLite, ``memory://`` and PostgreSQL.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tok17_texts import PAIRS

from memstrata import Memory, Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import fts5

# (texts, query, index of the text that must come first, texts that must not be hit)
CASES: dict[str, tuple[list[str], str, int, list[int]]] = {
    # 서울 (Seoul) vs a message that holds 서 and 울 in other words
    "ko-seoul": ([m for m, _ in PAIRS["ko"]], "서울", 0, []),
    # दिल (heart) and दाल (lentils) were both the terms द, ल
    "hi-vowel-signs": (["मुझे दाल पसंद है", "मेरा दिल टूट गया"], "दिल", 1, [0]),
    # いか (squid) and かい (shell) were both the terms い, か
    "ja-kana-order": (["浜でかいを拾った", "夕食にいかを食べた"], "いか", 1, [0]),
    # ตลาด (market) inside a clause was part of one garbage token
    "th-in-clause": (["ฉันไปตลาดเมื่อวานนี้กับแม่ของฉัน", "ฉันชอบกินข้าวผัด"], "ตลาด", 0, [1]),
    # ພາສາລາວ (Lao language) inside a clause
    "lo-in-clause": (["ພາສາລາວເປັນພາສາທີ່ສວຍງາມ", "ມື້ນີ້ອາກາດດີ"], "ພາສາລາວ", 0, [1]),
}


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    if request.param == "postgresql":
        server = request.getfixturevalue("pg_server")
        schema = f"tok17_{tmp_path.name[-20:].lower()}".replace("-", "_")
        m = Memory(server.url(schema), embedder="hashing", background=False)
        yield m
        m.close()
        server.drop(schema)
        return
    url = f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"
    m = Memory(url, embedder="hashing", background=False)
    yield m
    m.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_word_is_found_first_and_only_where_it_is(mem: Memory, case: str) -> None:
    texts, query, want, never = CASES[case]
    scope = Scope("t", case, session="s")
    ids = [mem.add_message(scope, "user", t).id for t in texts]
    hits = [h.record.id for h in mem.search(Scope("t", case), query, top_k=10, mode="lexical")]
    assert hits and hits[0] == ids[want], (case, hits, ids)
    assert not {ids[i] for i in never} & set(hits), (case, hits)


def test_each_question_finds_its_message_among_five(mem: Memory) -> None:
    """The hand-written questions (tests/search/tok17_texts.py) by lexical search: each
    language's message is in the question's top 5 for at least 17 of 20."""
    for lang, pairs in PAIRS.items():
        scope = Scope("t", lang, session="s")
        ids = [mem.add_message(scope, "user", m).id for m, _ in pairs]
        found = 0
        for i, (_, question) in enumerate(pairs):
            hits = mem.search(Scope("t", lang), question, top_k=5, mode="lexical")
            found += ids[i] in [h.record.id for h in hits]
        assert found >= 17, (lang, found)


# --- any word of a stored text finds it (property) ------------------------------------
_HANGUL = st.text(st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3), min_size=1, max_size=5)
_DEVANAGARI = st.lists(
    st.tuples(
        st.characters(min_codepoint=0x915, max_codepoint=0x939),
        st.sampled_from(
            [
                "",
                "\u093e",
                "\u093f",
                "\u0940",
                "\u0941",
                "\u0947",
                "\u094b",
                "\u094d",
                "\u0902",
                "\u0947\u0902",
            ]
        ),
    ),
    min_size=1,
    max_size=5,
).map(lambda cs: "".join(a + b for a, b in cs))


def _clusters(letters: tuple[int, int], marks: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(
        st.tuples(
            st.characters(min_codepoint=letters[0], max_codepoint=letters[1]).filter(
                lambda c: unicodedata.category(c) == "Lo"
            ),
            st.sampled_from(["", *marks]),
        ).map(lambda t: t[0] + t[1]),
        min_size=2,
        max_size=12,
    )


_THAI = _clusters(
    (0xE01, 0xE2E), ["\u0e31", "\u0e34", "\u0e35", "\u0e48", "\u0e49", "\u0e31\u0e49"]
)
_KHMER = _clusters((0x1780, 0x17A2), ["\u17b6", "\u17c1", "\u17d2\u1780", "\u17bb\u17c6"])
_MYANMAR = _clusters((0x1000, 0x1020), ["\u102c", "\u102d", "\u103a", "\u1031", "\u1037"])
_KANA = st.text(st.characters(min_codepoint=0x30A1, max_codepoint=0x30F4), min_size=2, max_size=6)


def _found(word: str, text: str) -> bool:
    """Every token of the query ``word`` is a token the text is indexed under."""
    want = fts5.document_tokens(tokenize(word))
    return bool(want) and set(want) <= set(fts5.document_tokens(tokenize(text)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_HANGUL, _DEVANAGARI, _KANA), min_size=1, max_size=8), st.data())
def test_any_word_of_a_spaced_text_finds_it(words: list[str], data: st.DataObject) -> None:
    text = " ".join(words)
    word = data.draw(st.sampled_from(words))
    assume(tokenize(word))  # a function word (Hindi का, है …) makes no term, by design
    assert _found(word, text)
    if "\uac00" <= word[0] <= "\ud7a3":  # a Korean stem: any start of an eojeol
        assert _found(word[: data.draw(st.integers(1, len(word)))], text)


@settings(max_examples=150, deadline=None)
@given(st.one_of(_THAI, _KHMER, _MYANMAR), st.data())
def test_any_word_inside_a_clause_without_spaces_finds_it(
    clusters: list[str], data: st.DataObject
) -> None:
    """A word of two clusters or more anywhere in a clause (a cluster: a letter and its
    marks; a one-cluster word is a bigram's half and is not promised)."""
    start = data.draw(st.integers(0, len(clusters) - 2))
    end = data.draw(st.integers(start + 2, len(clusters)))
    assert _found("".join(clusters[start:end]), "".join(clusters))


def test_a_term_with_marks_is_one_token() -> None:
    for word in ["हिन्दी", "ที่นี่", "មែរ", "မြန်"]:
        assert fts5.tokens(word) == (word,)
    assert tokenize("हिन्दी किताब") == ["हिन्दी", "किताब"]
    assert "서울" in tokenize("서울에서") and "서" in tokenize("서울에서")
    assert tokenize("コーヒーとひらがな") == [
        "コー",
        "ーヒ",
        "ヒー",
        "とひ",
        "ひら",
        "らが",
        "がな",
    ]
