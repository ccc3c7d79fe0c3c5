"""Terms of the scripts that need more than words split at spaces (pure, no model).

:func:`memstrata.search.tokenize.tokenize` hands these the runs of text it does not cut
itself (English, other space-separated words and Chinese stay its own):

- **Hangul** (Korean): each eojeol (a run of syllables between spaces) gives its
  overlapping syllable bigrams and its first syllable, so "서울에서" matches "서울" and a
  one-syllable noun before a particle ("집에" → "집") is still found.
- **Kana** (Japanese): overlapping bigrams of each hiragana/katakana run; a run of one
  hiragana (a particle: は, に, を …) gives nothing, one katakana itself. Kanji runs go to
  jieba as Chinese does, so a kanji word is cut the same way with or without kana around.
- **Thai, Lao, Khmer, Myanmar** (written without spaces): overlapping bigrams of
  character clusters (a letter with the marks that follow it), as Lucene's
  CJKBigramFilter does for CJK; a one-cluster run gives itself.
- **Marks** (Indic vowel signs and viramas, Arabic and Hebrew points, …): kept inside the
  word after a letter of a script that uses them (code points U+0590 and up, outside
  CJK), so "हिन्दी" is one term instead of three. After a Cyrillic letter a mark still
  separates, as before.

Every other character is cut as before, so text without these scripts gets exactly the
terms it always had (and stores indexed before schema 11 need re-terming only for records
holding them: :func:`may_change`).

**Accents** (schema 15 on SQLite, 17 on PostgreSQL): :func:`fold` writes a Latin or Greek
letter without its diacritics ("é" → "e", "ø" → "o", "ł" → "l", "ß" → "ss", "ά" → "α")
and drops the marks after such a letter, before any cut, for every text, so "Zoe" meets
"Zoë" and "Αθηνα" meets "Αθήνα" (Greek capitals are written without tonos). The letters of
every other script keep their marks (:data:`MARKED`); ASCII text is never touched.
Records indexed before hold the unfolded terms: :func:`may_fold` finds them.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "HANGUL",
    "KANA",
    "MARKED",
    "SPACELESS",
    "fold",
    "hangul_terms",
    "kana_terms",
    "keep_marks",
    "may_change",
    "may_fold",
    "runs",
    "spaceless_terms",
    "special",
]

HANGUL = "\uac00-\ud7af"  # syllables (what the tokenizer's CJK class held before)
KANA = "\u3040-\u30ff"  # hiragana and katakana blocks (also in the old CJK class)
SPACELESS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\ua9e0-\ua9ff\uaa60-\uaa7f"
# Letters after which a combining mark belongs to the word: Hebrew to the end of the
# Brahmic and South-East Asian blocks (Hangul jamo included: they hold no marks), their
# extensions, and the historic scripts of the supplementary plane.
MARKED = "\u0590-\u1cff\ua800-\uabff\U00010000-\U0001ffff"

# A text without any of these characters is cut exactly as before schema 11.
_SPECIAL = re.compile(f"[{HANGUL}{KANA}{SPACELESS}{MARKED}]")


def may_change(text: str) -> bool:
    """Whether ``text`` (as given or as indexed terms) holds a character whose terms this
    module makes: a record whose text and indexed terms hold none keeps its terms."""
    return _SPECIAL.search(unicodedata.normalize("NFKC", text)) is not None


def special(norm: str) -> bool:
    """:func:`may_change` for text already NFKC-normalised."""
    return _SPECIAL.search(norm) is not None


@lru_cache(maxsize=1)
def _marks() -> tuple[int, ...]:
    """Every combining mark (categories Mn, Mc, Me)."""
    return tuple(cp for cp in range(0x110000) if unicodedata.category(chr(cp))[0] == "M")


@lru_cache(maxsize=1)
def _mark_class() -> str:
    """Every combining mark as regex class ranges."""
    return _ranges(list(_marks()))


def _ranges(cps: list[int]) -> str:
    """Code points as regex class ranges."""
    ranges: list[tuple[int, int]] = []
    for cp in cps:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )


@lru_cache(maxsize=1)
def _lone_marks() -> re.Pattern[str]:
    """Marks that follow neither a word character of :data:`MARKED` nor a kept mark."""
    bases = [
        cp
        for a, b in ((0x0590, 0x1CFF), (0xA800, 0xABFF), (0x10000, 0x1FFFF))
        for cp in range(a, b + 1)
        if re.match(r"\w", chr(cp))
    ]
    m = _mark_class()
    # The mark first (a class: the scan skips to the next mark), then what is before it.
    return re.compile(f"[{m}](?<![{_ranges(bases)}{m}][{m}])[{m}]*")


def keep_marks(norm: str) -> str:
    """``norm`` with every mark that does not follow a letter of :data:`MARKED` (or a kept
    mark) replaced by a space: a separator, as every mark was before."""
    return _lone_marks().sub(" ", norm)


@lru_cache(maxsize=1)
def runs() -> re.Pattern[str]:
    """The runs of a text with special characters, after :func:`keep_marks`: Chinese
    characters, Hangul, kana, space-less scripts, and words (word characters and marks)."""
    m = _mark_class()
    han = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    return re.compile(
        f"(?P<han>[{han}]+)|(?P<hangul>[{HANGUL}]+)|(?P<kana>[{KANA}]+)"
        f"|(?P<spaceless>(?:(?=[\\w{m}])[{SPACELESS}])+)"
        f"|(?P<word>(?:[^\\W{HANGUL}{KANA}{SPACELESS}]|[{m}])+)"
    )


# Letters that do not decompose into a letter and marks, written as a reader who lacks them
# on a keyboard does (as Lucene's ASCIIFoldingFilter writes them, but for "ə": Lucene makes
# it "a", while Azerbaijani is typed with "e", as in "Azerbaijan"). A letter named
# "LATIN ... LETTER X WITH ..." (a stroke, hook, bar …: "ø", "ł", "đ", "ɓ") is "x" without
# a table entry.
_NAMED = {
    "æ": "ae",
    "œ": "oe",
    "ß": "ss",
    "ð": "d",
    "þ": "th",
    "ı": "i",
    "ȷ": "j",
    "ĸ": "q",
    "ŋ": "n",
    "ɛ": "e",
    "ɔ": "o",
    "ə": "e",
    "ǝ": "e",
    "ɵ": "o",
    "ʉ": "u",
}
_WITH = re.compile(r"LATIN (?:SMALL|CAPITAL) LETTER ([A-Z]) WITH (?!.*LETTER).*")
# The blocks of Latin and Greek letters (Latin-1 to Latin Extended-E, IPA, phonetic
# extensions, Greek and Coptic, Greek Extended); only letters named LATIN or GREEK count.
# All in the Basic Multilingual Plane, and so are the marks :func:`fold` drops: a regex
# class holding a code point above U+FFFF is tested range by range, and scanning a message
# for one took 37 µs instead of 0.5 (the phonetic letters of Latin Extended-F and -G, and
# marks of historic scripts, are not written after a Latin letter in chat).
_BLOCKS = (
    (0x00C0, 0x02AF),
    (0x0370, 0x03FF),
    (0x1D00, 0x1DBF),
    (0x1E00, 0x1FFF),
    (0x2C60, 0x2C7F),
    (0xA720, 0xA7FF),
    (0xAB30, 0xAB6F),
)


def _folded(ch: str) -> str:
    """A Latin or Greek letter (lower-cased) without its diacritics."""
    out = []
    for c in unicodedata.normalize("NFD", ch.lower()):
        if unicodedata.category(c)[0] == "M":
            continue
        named = _WITH.fullmatch(unicodedata.name(c, ""))
        out.append(_NAMED.get(c) or (named.group(1).lower() if named else c))
    return "".join(out)


@lru_cache(maxsize=1)
def _folding() -> tuple[re.Pattern[str], dict[int, str | None]]:
    """The pattern of what :func:`fold` rewrites (a letter with a fold and the marks after
    it, or the marks after any Latin or Greek letter) and the table that rewrites it
    (every mark deleted)."""
    letters: list[int] = [*range(0x41, 0x5B), *range(0x61, 0x7B)]
    table: dict[int, str | None] = {}
    for a, b in _BLOCKS:
        for cp in range(a, b + 1):
            ch = chr(cp)
            if unicodedata.category(ch)[0] != "L" or not unicodedata.name(ch, "").startswith(
                ("LATIN ", "GREEK ")
            ):
                continue
            letters.append(cp)
            folded = _folded(ch)
            if folded != ch.lower():
                table[cp] = folded
    marks = [cp for cp in range(0x10000) if unicodedata.category(chr(cp))[0] == "M"]
    table.update(dict.fromkeys(marks))
    folds, m = _ranges(sorted(k for k, v in table.items() if v is not None)), _ranges(marks)
    # One class first, so the scan skips to the next candidate in C (1.6 µs a message with
    # an accent, against 5.9 for two alternatives), then what comes before it: the letter
    # itself, or a Latin or Greek letter before the mark.
    pattern = re.compile(
        f"[{folds}{m}](?:(?<=[{folds}])|(?<=[{_ranges(sorted(letters))}][{m}]))[{m}]*"
    )
    return pattern, table


def fold(norm: str) -> str:
    """``norm`` (NFKC, lower-cased) with its Latin and Greek letters written without
    diacritics and the marks after them dropped: "zoë" → "zoe", "łódź" → "lodz",
    "straße" → "strasse", "i̇stanbul" (a lower-cased "İ") → "istanbul". Other scripts'
    letters and marks stay as they are."""
    if norm.isascii():
        return norm
    pattern, table = _folding()
    return pattern.sub(lambda found: found.group(0).translate(table), norm)


def may_fold(text: str) -> bool:
    """Whether :func:`fold` changes ``text`` (as given or as indexed terms, after the
    tokenizer's NFKC and lower-casing): a record whose text and indexed terms hold no
    such letter keeps its terms."""
    if text.isascii():
        return False
    return _folding()[0].search(unicodedata.normalize("NFKC", text).lower()) is not None


def _bigrams(units: list[str]) -> list[str]:
    if len(units) == 1:
        return units
    return [a + b for a, b in zip(units, units[1:], strict=False)]


def hangul_terms(run: str) -> list[str]:
    """An eojeol's syllable bigrams and its first syllable."""
    if len(run) == 1:
        return [run]
    return [run[0], *_bigrams(list(run))]


# A hiragana word (with any prolonged-sound marks after it) or a katakana word.
_KANA_WORD = re.compile("[\u3041-\u3096\u309d\u309e]+\u30fc*|[\u30a1-\u30fa\u30fc-\u30ff]+")
_HIRAGANA = re.compile("[\u3041-\u3096\u309d\u309e]")


def kana_terms(run: str) -> list[str]:
    """Bigrams of each kana word of ``run`` (hiragana and katakana words apart; ``・``
    and the like separate); a single
    hiragana (a particle) gives nothing, a single katakana itself."""
    out: list[str] = []
    for word in _KANA_WORD.findall(run):
        if len(word) == 1 and _HIRAGANA.match(word):
            continue
        out.extend(_bigrams(list(word)))
    return out


def spaceless_terms(run: str) -> list[str]:
    """Bigrams of the clusters of a Thai, Lao, Khmer or Myanmar run (a cluster: a
    character with the marks that follow it; a run never starts with a mark)."""
    clusters: list[str] = []
    for ch in run:
        if clusters and unicodedata.category(ch)[0] == "M":
            clusters[-1] += ch
        else:
            clusters.append(ch)
    return _bigrams(clusters)
