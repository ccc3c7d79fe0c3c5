"""The built-in token estimate stays at or above what today's tokenizer counts, in every
script (memstrata/tokens.py). Before session 24 it counted CJK at 1.5 characters per token
and everything else at 4, under ``o200k_base`` (GPT-4o and later) for every script but
English and its neighbours: a context built to a budget of 1,000 tokens took ~1,500 of
them in Thai, Greek or Hebrew, ~1,200 in Chinese, and twice as many of emoji or numbers.

The counts below were made once with ``tiktoken`` 0.14.0's ``o200k_base`` (the encoding file
cannot be fetched here at test time); the sentences were written for this test.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.tokens import estimate_tokens

O200K = [
    ("zh", "我妹妹住在成都，每个星期天都给我打电话。上个月我们一起去了西安。", 23),
    (
        "ja",
        "妹は大阪に住んでいて、毎週日曜日に電話をくれます。先月、私たちは京都に行きました。",
        32,
    ),
    (
        "ko",
        "제 여동생은 부산에 살고 매주 일요일에 저에게 전화해요. 지난달에 우리는 제주도에 갔어요.",
        31,
    ),
    (
        "hi",
        "मेरी बहन दिल्ली में रहती है और वह हर रविवार को मुझे फोन करती है। पिछले महीने हम आगरा गए थे।",
        26,
    ),
    (
        "th",
        "พี่สาวของฉันอาศัยอยู่ที่เชียงใหม่ และเธอโทรหาฉันทุกวันอาทิตย์ เมื่อเดือนที่แล้วเราไปเที่ยวภูเก็ต",
        36,
    ),
    (
        "ru",
        "Моя сестра живёт в Новосибирске и звонит мне каждое воскресенье. "
        "В прошлом месяце мы ездили в Казань.",
        30,
    ),
    ("ar", "تعيش أختي في القاهرة وتتصل بي كل يوم أحد. الشهر الماضي ذهبنا إلى الإسكندرية.", 23),
    ("el", "Η αδελφή μου μένει στη Θεσσαλονίκη και με παίρνει τηλέφωνο κάθε Κυριακή.", 27),
    ("he", "אחותי גרה בחיפה והיא מתקשרת אליי כל יום ראשון. בחודש שעבר נסענו לאילת.", 26),
    (
        "vi",
        "Em gái tôi sống ở Đà Nẵng và gọi cho tôi mỗi Chủ nhật. Tháng trước chúng tôi đã đi Huế.",
        28,
    ),
    (
        "de",
        "Meine Schwester wohnt in Göttingen und ruft mich jeden Sonntag an. "
        "Letzten Monat waren wir in Würzburg.",
        24,
    ),
    (
        "en",
        "My sister lives in Denver and calls me every Sunday. "
        "Last month we drove to Santa Fe together.",
        20,
    ),
    ("emoji", "🎉🎂🥳 happy birthday!!! 😍😍 see you at the party 🙂", 18),
    (
        "numbers",
        "order 4839201 shipped 2024-03-17 14:22:05, total $1,284.57, call +1 (415) 555-0199",
        39,
    ),
    ("code", "def f(x):\n    return {k: v for k, v in x.items() if v is not None}  # filter", 27),
]


@pytest.mark.parametrize(("kind", "text", "real"), O200K, ids=[k for k, _, _ in O200K])
def test_the_estimate_is_not_below_the_tokenizer(kind: str, text: str, real: int) -> None:
    assert estimate_tokens(text) >= real - 1  # a token of slack on a sentence, none in sum


def test_over_all_scripts_the_estimate_covers_the_tokenizer() -> None:
    estimated = sum(estimate_tokens(text) for _, text, _ in O200K)
    real = sum(n for _, _, n in O200K)
    assert real <= estimated <= 1.5 * real  # and not wastefully above


@given(st.text(max_size=400))
def test_any_text_is_counted(text: str) -> None:
    n = estimate_tokens(text)
    assert n >= 0
    assert (n == 0) == (text == "")
    assert estimate_tokens(text + text) >= n
