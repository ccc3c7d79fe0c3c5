"""The seed 000 §9 decision tree, as a table, and the heuristic score estimate."""

from __future__ import annotations

import pytest

from memstrata.layers.router import Layer, RouteInput, estimate, route


def general(stability: float, applicability: float, importance: float) -> RouteInput:
    return RouteInput(
        is_cross_session=True,
        is_generalizable=True,
        stability=stability,
        applicability=applicability,
        importance=importance,
    )


@pytest.mark.parametrize(
    ("item", "layer"),
    [
        (RouteInput(is_direct_message=True, is_task_state=True), Layer.SHORT_TERM),
        (RouteInput(is_task_state=True, is_cross_session=True), Layer.WORKING),
        (
            RouteInput(
                is_cross_session=False,
                is_generalizable=True,
                stability=1,
                applicability=1,
                importance=1,
            ),
            Layer.DISCARD,
        ),
        (general(0.71, 0.61, 0.61), Layer.SEMANTIC),
        (general(0.7, 0.9, 0.9), Layer.EPISODIC),
        (general(0.9, 0.6, 0.9), Layer.EPISODIC),
        (general(0.9, 0.9, 0.6), Layer.EPISODIC),
        (
            RouteInput(is_cross_session=True, stability=1, applicability=1, importance=1),
            Layer.EPISODIC,
        ),
    ],
)
def test_route_table(item: RouteInput, layer: Layer) -> None:
    assert route(item) is layer


@pytest.mark.parametrize(
    ("text", "layer"),
    [
        ("Always clean missing values before aggregating any data", Layer.SEMANTIC),
        ("My favorite drink is matcha latte", Layer.SEMANTIC),
        (
            "我发现你上次的方法不对，应该用另一种方式处理销售数据的季节性问题，线性回归忽略了季节性",
            Layer.EPISODIC,
        ),
        ("thanks!", Layer.DISCARD),
        ("好的，谢谢", Layer.DISCARD),
    ],
)
def test_estimate_then_route(text: str, layer: Layer) -> None:
    assert route(estimate(text)) is layer


def test_estimate_keeps_the_callers_flags() -> None:
    assert route(estimate("thanks!", is_direct_message=True)) is Layer.SHORT_TERM
    assert route(estimate("15% missing values", is_task_state=True)) is Layer.WORKING
