""":func:`invalid_params` over generated params of every MCP request method: it refuses
exactly what the SDK's model of the method refuses, in one short line that never echoes
the value sent (a property over JSON values; the transports are tested in
``test_mcp_invalid_params.py``)."""

from __future__ import annotations

from typing import Any

import pydantic
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types.methods import MONOLITH_REQUESTS

from memstrata.mcp_server.server import invalid_params

SECRET = "zq-secret-value-zq"
leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.just(SECRET), st.text(max_size=8),
)  # fmt: skip
json_values = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "arguments",
                    "cursor",
                    "uri",
                    "level",
                    "_meta",
                    "protocolVersion",
                    "capabilities",
                    "clientInfo",
                    SECRET,
                ]
            ),
            inner,
            max_size=4,
        ),  # fmt: skip
    ),
    max_leaves=8,
)
methods = st.sampled_from(sorted(MONOLITH_REQUESTS))


@settings(max_examples=400, deadline=None)
@given(methods, st.one_of(st.just(None), json_values), st.one_of(st.integers(), st.text()))
def test_refuses_what_the_model_refuses_and_says_so_briefly(
    method: str, params: Any, rid: int | str
) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    body: dict[str, Any] = {"method": method}
    if params is not None:
        message["params"] = body["params"] = params
    try:
        MONOLITH_REQUESTS[method].model_validate(body, by_name=False)
        refused = False
    except pydantic.ValidationError:
        refused = True
    said = invalid_params(message)
    assert (said is not None) == refused, (method, params, said)
    if said is not None:
        assert said.startswith(f'Invalid params of "{method}": '), said
        assert SECRET not in said.split(": ", 1)[1].replace(f"{SECRET}:", ""), said
        assert "validation error" not in said.lower() and "pydantic" not in said, said
        assert len(said) < 2_000, said
    notification = {k: v for k, v in message.items() if k != "id"}
    assert invalid_params(notification) is None  # nothing to answer a notification with
