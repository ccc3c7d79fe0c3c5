"""The HTTP API and URLs or bodies that cannot be read as the client meant them.

Starlette decodes a percent-escape that is not UTF-8 as U+FFFD, so before session 20's
audit ``/v1/users/caf%E9`` and ``/v1/users/caf%E8`` (a Latin-1 client's "café" and
"cafè") were both the user "caf\\ufffd": each read and wrote the other's memories. Now the
request is refused (400) and nothing is written. A body FastAPI cannot even decode got
"There was an error parsing the body" with no fix; now the message says what to send.
"""

from __future__ import annotations

import gzip

import pytest

from memstrata import Filters, Scope
from server.conftest import Served

PLAIN = {"content-type": "application/json"}


def _count(s: Served, user: str) -> int:
    return s.memory.store.count(Scope("acme", user), Filters(include_deleted=True))


@pytest.mark.parametrize(
    "path",
    [
        "/v1/users/caf%E9/memories",
        "/v1/users/%FF/memories",
        "/v1/users/alice/sessions/s%E9/messages",
        "/v1/users/%ED%A0%80/memories",  # a UTF-16 surrogate written as UTF-8 bytes
    ],
)
def test_a_path_whose_escapes_are_not_utf8_is_refused(served: Served, path: str) -> None:
    body = {"content": "I live in Lisbon", "role": "user"} if "messages" in path else None
    body = body or {"content": "I live in Lisbon"}
    r = served.client.post(path, json=body, headers=served.h(served.admin))
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "bad_encoding" and "UTF-8" in err["message"]
    assert (
        served.client.get(path.rsplit("/", 1)[0], headers=served.h(served.admin)).status_code == 400
    )
    for user in ("caf\ufffd", "\ufffd", "\ufffd\ufffd\ufffd", "alice"):
        assert _count(served, user) == 0


def test_two_latin1_names_no_longer_share_one_memory(served: Served) -> None:
    h = served.h(served.admin)
    assert (
        served.client.post(
            "/v1/users/caf%E9/memories", json={"content": "x y"}, headers=h
        ).status_code
        == 400
    )
    ok = served.client.post(
        "/v1/users/caf%C3%A9/memories", json={"content": "café text"}, headers=h
    )
    assert ok.status_code == 201 and ok.json()["user"] == "café"
    assert served.client.get("/v1/users/caf%E8/memories", headers=h).status_code == 400
    listed = served.client.get("/v1/users/caf%C3%A8/memories", headers=h)
    assert listed.status_code == 200 and listed.json()["items"] == []


def test_a_query_string_whose_escapes_are_not_utf8_is_refused(served: Served) -> None:
    served.client.post(
        "/v1/users/alice/memories",
        json={"content": "x y", "tags": ["é"]},
        headers=served.h(served.admin),
    )
    r = served.client.get("/v1/users/alice/memories?tag=%E9", headers=served.h(served.admin))
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_encoding"
    r = served.client.get("/v1/users/alice/memories?tag=%C3%A9", headers=served.h(served.admin))
    assert r.status_code == 200 and len(r.json()["items"]) == 1


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b'{"content": "caf\xe9"}', PLAIN),  # Latin-1
        (gzip.compress(b'{"content": "zipped"}', mtime=0), {**PLAIN, "content-encoding": "gzip"}),
        (b'{"content": "x", "importance": ' + b"9" * 5000 + b"}", PLAIN),
        (b'{"content": "x", "metadata": ' + b'{"a":' * 3000 + b"1" + b"}" * 3001, PLAIN),
    ],
    ids=["latin-1", "gzip", "5000 digits", "3000 deep"],
)
def test_a_body_that_cannot_be_decoded_says_what_to_send(
    served: Served, body: bytes, headers: dict[str, str]
) -> None:
    r = served.client.post(
        "/v1/users/alice/memories", content=body, headers={**served.h(served.admin), **headers}
    )
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "malformed_json" and "encoded as UTF-8" in err["message"], err
    assert _count(served, "alice") == 0
