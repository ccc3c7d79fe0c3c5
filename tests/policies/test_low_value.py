"""The low-value filter (seed 002 §8.6), English and Chinese."""

from __future__ import annotations

import pytest

from memstrata.policies.low_value import LowValueReason, is_low_value, low_value_reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("thanks!", LowValueReason.SMALL_TALK),
        ("Hi there, how are you?", LowValueReason.SMALL_TALK),
        ("好的，谢谢！", LowValueReason.SMALL_TALK),
        ("哈哈哈", LowValueReason.SMALL_TALK),
        ("   ", LowValueReason.EMPTY),
        (
            'Traceback (most recent call last):\n  File "app.py", line 3, in <module>',
            LowValueReason.ERROR,
        ),
        ("ValueError: invalid literal for int() with base 10: 'abc'", LowValueReason.ERROR),
        (
            "Error: connection refused while contacting the database server at port 5432",
            LowValueReason.ERROR,
        ),
        ("错误：无法连接数据库", LowValueReason.ERROR),
        ("let me check that for you", LowValueReason.SHORT),
        ("稍等一下", LowValueReason.SHORT),
    ],
)
def test_low_value(text: str, reason: LowValueReason) -> None:
    assert low_value_reason(text) is reason
    assert is_low_value(text)


@pytest.mark.parametrize(
    "text",
    [
        "My name is Li.",  # short, but a fact
        "我叫李雷",
        "I went hiking in the Alps with my sister last summer and we loved the views",
        "下周三之前我必须把季度报告交给我的经理，这件事情非常重要，请一定提醒我，还要准备好演示文稿和数据附件，并且检查所有的图表是否正确无误。",
    ],
)
def test_kept(text: str) -> None:
    assert low_value_reason(text) is None


def test_threshold_is_configurable() -> None:
    text = "let me check that for you"
    assert not is_low_value(text, max_chars=10)
