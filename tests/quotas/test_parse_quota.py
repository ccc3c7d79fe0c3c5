"""``parse_quota``: the quota strings ``memstrata serve --user-quota/--tenant-quota`` take."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.quotas import Quota, parse_quota
from memstrata.server.factory import ServeConfig, server_quotas


@pytest.mark.parametrize(
    ("spec", "quota"),
    [
        ("", Quota()),
        ("records=10", Quota(max_records=10)),
        (" records = 1_000 , embeddings=5,context=4000 ", Quota(1000, 5, 4000)),
        ("max_records=3,embeddings_per_day=4,context_tokens=5,", Quota(3, 4, 5)),
    ],
)
def test_good_specs(spec: str, quota: Quota) -> None:
    assert parse_quota(spec) == quota


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("records", "NAME=NUMBER"),
        ("rows=5", "NAME=NUMBER"),
        ("records=0", "integer >= 1"),
        ("records=-1", "integer >= 1"),
        ("records=1.5", "whole number"),
        ("records=NaN", "whole number"),
        ("records=1,records=2", "given twice"),
    ],
)
def test_bad_specs_name_the_fix(spec: str, named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        parse_quota(spec)


@given(st.text(max_size=40))
def test_any_text_is_a_quota_or_a_validation_error(spec: str) -> None:
    with contextlib.suppress(ValidationError):
        assert isinstance(parse_quota(spec), Quota)


def test_serve_config_round_trips_its_quotas() -> None:
    config = ServeConfig(user_quota="records=5", tenant_quota="embeddings_per_day=9")
    again = ServeConfig.from_json(config.to_json())
    quotas = server_quotas(again)
    assert quotas is not None
    assert quotas.per_user == Quota(max_records=5)
    assert quotas.per_tenant == Quota(embeddings_per_day=9)
    assert server_quotas(ServeConfig()) is None
