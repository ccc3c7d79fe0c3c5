"""A query parameter the route does not read, or that takes one value and is repeated, is
a 422 naming it; one that takes a list repeats as before. FastAPI ignored the first and
kept the last value of the second without a word (``?agent=a&agent=b`` listed agent b's
records), which schemathesis's negative-data check caught now and then."""

from __future__ import annotations

from memstrata import Scope

from .conftest import Served


def test_a_single_valued_query_parameter_given_twice_is_refused(served: Served) -> None:
    h = served.h(served.admin)
    for agent in ("a", "b"):
        served.memory.add(Scope("acme", "alice", agent=agent), f"a note of agent {agent}")
    base = "/v1/users/alice/memories"
    r = served.client.get(f"{base}?agent=a&agent=b", headers=h)
    assert r.status_code == 422, r.text
    assert "'agent' was given 2 times" in r.json()["error"]["message"]
    r = served.client.get(f"{base}?limit=5&limit=500", headers=h)
    assert r.status_code == 422 and "'limit'" in r.json()["error"]["message"]
    one = served.client.get(f"{base}?agent=b", headers=h)
    assert one.status_code == 200
    assert [x["content"]["raw"] for x in one.json()["items"]] == ["a note of agent b"]


def test_a_list_parameter_still_repeats(served: Served) -> None:
    h = served.h(served.admin)
    served.memory.add(Scope("acme", "alice"), "tagged", tags=["x"])
    served.memory.add(Scope("acme", "alice"), "tagged too", tags=["y"])
    r = served.client.get("/v1/users/alice/memories?tag=x&tag=y&type=note&type=fact", headers=h)
    assert r.status_code == 200, r.text
    assert sorted(x["content"]["raw"] for x in r.json()["items"]) == ["tagged", "tagged too"]


def test_a_query_parameter_the_route_does_not_read_is_refused(served: Served) -> None:
    """``observed_after`` is a search filter, not a listing parameter: the listing ignored
    it and answered every record, as if filtered."""
    h = served.h(served.admin)
    served.memory.add(Scope("acme", "alice"), "an old note")
    r = served.client.get("/v1/users/alice/memories?observed_after=2030-01-01T00:00:00Z", headers=h)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "'observed_after' is not one this route reads" in message and "limit" in message
    assert served.client.get("/v1/users/alice/memories?limit=5", headers=h).status_code == 200
    r = served.client.get("/v1/users/alice/memories/x/history?verbose=1", headers=h)
    assert r.status_code == 422 and "(it takes: none)" in r.json()["error"]["message"]
