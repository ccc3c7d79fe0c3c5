"""Hostile requests against a real ``memstrata serve`` (tests/serving.py): each gets a clear
JSON answer (or, with nothing to answer, a closed connection), and the server goes on
serving: after each probe a second client's write succeeds, and the log holds no traceback.

What failed before session 23 (each case says): a parser refusal (a 64 kB URL, a negative
or doubled ``Content-Length``, chunked with ``Content-Length``, a malformed chunk) was
uvicorn's ``text/plain`` "Invalid HTTP request received."; 500 headers or a 1 MB header
were read whole and served; a 413 kept the connection open and read the rest of a body of
any declared size to reach a pipelined request. What held is tested as well, so that it
keeps holding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx2
import pytest

from memstrata.server.keys import SQLiteKeyStore
from serving import Running, serve

from .hostile import Answer, exchange, request

MEMORIES = b"/v1/users/alice/memories"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    tmp = tmp_path_factory.mktemp("hostile")
    db = tmp / "h.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme", role="admin").secret
    keys.close()
    with serve(f"sqlite:///{db}", tmp, "--rate-limit", "0", "--no-mcp") as s:
        yield s, key
    log = s.log_text()
    assert "Traceback" not in log and '"level": "error"' not in log, log[-3000:]
    # a client's bad request is not the server's warning (before: uvicorn's "Invalid HTTP
    # request received." and, for an upgrade, two warnings advising a WebSocket library)
    assert '"level": "warning"' not in log, log[-3000:]


def _other_client_served(s: Running, key: str) -> None:
    r = httpx2.post(
        f"{s.url}/v1/users/bob/memories",
        json={"content": "a client beside the probe"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert r.status_code == 201, r.text


def _probe(server: tuple[Running, str], data: bytes, **kw: bool) -> Answer:
    s, key = server
    answer = exchange(s.address, data, **kw)
    _other_client_served(s, key)
    return answer


def _post(key: str, body: bytes, path: bytes = MEMORIES, **kw: object) -> bytes:
    return request("POST", path, key, body, **kw)  # type: ignore[arg-type]


# --- bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"[" * 100_000, "400", "malformed_json"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "400", "malformed_json"),
        (
            b'{"content":"x","metadata":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
            "400",
            "malformed_json",
        ),  # fmt: skip
        (
            b'{"content":"x","metadata":{"a":' + b"[" * 900 + b"]" * 900 + b"}}",
            "422",
            "invalid_request",
        ),  # fmt: skip
    ],
    ids=["100k [", "50k {", "100k [ in metadata", "900 [ in metadata"],
)
def test_deeply_nested_json_is_a_json_4xx(
    server: tuple[Running, str], body: bytes, status: str, code: str
) -> None:
    """Held before: FastAPI's parse hits the recursion limit and answers 400; 900 levels
    parse and are refused by the metadata's depth limit."""
    answer = _probe(server, _post(server[1], body))
    assert (answer.status, answer.error_code()) == (status, code)


BIG = str(2**4000).encode()  # 1,205 digits: Python's int parses it
HUGE = b"9" * 5000  # over Python's 4,300-digit limit for int("...")
NUMBERS = {"1e999": b"1e999", "-1e999": b"-1e999", "2**4000": BIG, "5000 digits": HUGE,
           "-0": b"-0", "-0.0": b"-0.0", "NaN": b"NaN"}  # fmt: skip
FIELDS = [
    (MEMORIES, b'{"content":"x","importance":%s}'),
    (MEMORIES, b'{"content":"x","confidence":%s}'),
    (MEMORIES, b'{"content":"x","metadata":{"n":%s}}'),
    (b"/v1/users/alice/search", b'{"query":"x","top_k":%s}'),
    (b"/v1/users/alice/context", b'{"query":"x","token_budget":%s}'),
    (b"/v1/users/alice/context", b'{"query":"x","reserve_ratio":%s}'),
    (b"/v1/users/alice/key-memory", b'{"text":"x","priority":%s}'),
]


@pytest.mark.parametrize("template", FIELDS, ids=lambda f: f[1].split(b":")[-1][:-3].decode())
def test_odd_numbers_in_every_numeric_field_are_answered(
    server: tuple[Running, str], template: tuple[bytes, bytes]
) -> None:
    """Held before: every value is a 4xx JSON error or, for a valid one (-0), stored."""
    path, body = template
    for name, value in NUMBERS.items():
        answer = _probe(server, _post(server[1], body % value, path))
        assert answer.status in ("200", "201", "400", "422"), (name, answer.raw[:300])
        if answer.status >= "400":
            assert answer.error_code() in ("malformed_json", "invalid_request"), name
        elif name not in ("-0", "-0.0") and not (b"metadata" in body and name == "2**4000"):
            # (metadata is the caller's JSON: an integer of 1,205 digits is valid JSON)
            pytest.fail(f"{name} in {body!r} was accepted: {answer.raw[:300]!r}")


def test_odd_numbers_in_the_query_and_a_patch(server: tuple[Running, str]) -> None:
    s, key = server
    for value in (b"1e999", BIG, HUGE, b"-0", b"NaN"):
        answer = _probe(server, request("GET", MEMORIES + b"?limit=" + value, key))
        assert answer.status == ("200" if value == b"-0" else "422") or (
            value == b"-0" and answer.status == "422"
        ), answer.raw[:300]
    created = httpx2.post(f"{s.url}/v1/users/alice/memories", json={"content": "to patch"},
                          headers={"Authorization": f"Bearer {key}"}).json()  # fmt: skip
    path = b"/v1/users/alice/memories/" + created["id"].encode()
    for value in (b"1e999", BIG, HUGE, b"-0"):
        body = b'{"expected_version":%s,"content":"y"}' % value
        answer = _probe(server, request("PATCH", path, key, body))
        assert answer.status in ("400", "422"), answer.raw[:300]
        answer.error_code()


@pytest.mark.parametrize(
    ("method", "target", "body", "extra", "status"),
    [("POST", MEMORIES, b'{"content":"a\\ud800b"}', b"", "422"),
     ("POST", MEMORIES, b'{"content":"x","tags":["\\udfff"]}', b"", "422"),
     ("POST", MEMORIES, b'{"content":"x","metadata":{"\\ud800":1}}', b"", "422"),
     ("POST", MEMORIES, b'{"content":"a\\u0000b"}', b"", "422"),
     ("GET", b"/v1/users/%00/memories", b"", b"", "422"),
     ("GET", b"/v1/users/%ff%fe/memories", b"", b"", "400"),
     ("GET", MEMORIES + b"?tag=%ff", b"", b"", "400"),
     ("GET", MEMORIES + b"?tag=%00", b"", b"", "422"),
     ("POST", MEMORIES, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", b"Content-Encoding: gzip\r\n",
      "400")],
    ids=["surrogate in content", "surrogate in a tag", "surrogate in a metadata key",
         "NUL in content", "NUL user", "not UTF-8 user", "not UTF-8 tag", "NUL tag", "gzip"],
)  # fmt: skip
def test_text_no_store_can_hold_is_a_json_4xx(
    server: tuple[Running, str], method: str, target: bytes, body: bytes, extra: bytes,
    status: str,
) -> None:  # fmt: skip
    """Held before: refused with what to fix, nothing stored."""
    answer = _probe(server, request(method, target, server[1], body, extra=extra))
    assert answer.status == status, answer.raw[:300]
    assert answer.error_code() in ("invalid_request", "bad_encoding", "malformed_json")


def test_a_huge_declared_body_waiting_for_100_continue_is_a_413(
    server: tuple[Running, str],
) -> None:
    """Held before: refused on its Content-Length, before the client sends a byte of it."""
    data = request("POST", MEMORIES, server[1], extra=b"Expect: 100-continue\r\n")
    answer = _probe(server, data.replace(b"Content-Length: 0", b"Content-Length: 99999999999"))
    assert (answer.status, answer.error_code()) == ("413", "too_large")


# --- the URL and the headers ---------------------------------------------------------------


def test_a_thousand_repeated_tags_are_served(server: tuple[Running, str]) -> None:
    query = b"&".join(b"tag=t%d" % i for i in range(1000))
    answer = _probe(server, request("GET", MEMORIES + b"?" + query, server[1]))
    assert answer.status == "200" and answer.json()["items"] == []


def test_thousands_of_unknown_query_parameters_are_a_422(server: tuple[Running, str]) -> None:
    query = b"&".join(b"p%d=1" % i for i in range(3000))
    answer = _probe(server, request("GET", MEMORIES + b"?" + query, server[1]))
    assert (answer.status, answer.error_code()) == ("422", "invalid_request")


@pytest.mark.parametrize(
    "target",
    [MEMORIES + b"?tag=" + b"a" * 65536, b"/v1/users/" + b"a" * 65536 + b"/memories",
     MEMORIES + b"?" + b"&".join(b"tag=t%d" % i for i in range(5000))],
    ids=["64 kB tag", "64 kB path", "5000 tags"],
)  # fmt: skip
def test_a_url_over_the_limit_is_a_json_414(server: tuple[Running, str], target: bytes) -> None:
    """Before: 64 kB was uvicorn's text/plain 400 (httptools cannot parse it), 5000 tags
    (50 kB) were served."""
    answer = _probe(server, request("GET", target, server[1]))
    assert (answer.status, answer.error_code()) == ("414", "uri_too_long")


@pytest.mark.parametrize(
    "extra",
    [b"".join(b"X-H%d: v\r\n" % i for i in range(500)), b"X-Big: " + b"a" * (1 << 20) + b"\r\n",
     b"X-Big: " + b"a" * 70_000 + b"\r\n"],
    ids=["500 headers", "1 MB header", "70 kB header"],
)  # fmt: skip
def test_too_many_or_too_large_headers_are_a_json_431(
    server: tuple[Running, str], extra: bytes
) -> None:
    """Before: served (200); uvicorn kept every header, of any size, in memory."""
    answer = _probe(server, request("GET", MEMORIES, server[1], extra=extra))
    assert (answer.status, answer.error_code()) == ("431", "headers_too_large")


def test_headers_under_the_limits_are_served(server: tuple[Running, str]) -> None:
    extra = b"".join(b"X-H%d: v\r\n" % i for i in range(90)) + b"X-Big: " + b"a" * 30_000 + b"\r\n"
    answer = _probe(server, request("GET", MEMORIES, server[1], extra=extra))
    assert answer.status == "200", answer.raw[:300]


@pytest.mark.parametrize(
    "upgrade",
    [b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="
     b"\r\nSec-WebSocket-Version: 13\r\n",
     b"Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABk\r\n"],
    ids=["websocket", "h2c"],
)  # fmt: skip
def test_an_upgrade_is_answered_as_plain_http(server: tuple[Running, str], upgrade: bytes) -> None:
    """Nothing here upgrades: the request is served as HTTP/1.1 (held before, with two
    warnings in the log per request)."""
    answer = _probe(server, request("GET", MEMORIES, server[1], extra=upgrade))
    assert answer.status == "200" and "items" in answer.json()


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n", "invalid url"),
     (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "PRI"),
     (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40, "Invalid method")],
    ids=["CONNECT", "HTTP/2 preface", "TLS handshake"],
)  # fmt: skip
def test_what_is_not_http_1_1_is_a_json_400(
    server: tuple[Running, str], data: bytes, says: str
) -> None:
    """Before: uvicorn's text/plain 400; a CONNECT said "User callback error" (its target
    is not a URL the parser can split)."""
    answer = _probe(server, data)
    assert (answer.status, answer.error_code()) == ("400", "bad_request")
    assert says in answer.json()["error"]["message"], answer.json()


def test_http_1_0_without_host_is_served(server: tuple[Running, str]) -> None:
    """Held before: HTTP/1.0 needs no Host."""
    answer = _probe(server, request("GET", MEMORIES, server[1], version=b"HTTP/1.0", host=False))
    assert answer.status == "200" and "items" in answer.json()


# --- framing -----------------------------------------------------------------------------


def _framed(key: str, body: bytes, length: bytes) -> bytes:
    return _post(key, body).replace(b"Content-Length: %d" % len(body), length)


@pytest.mark.parametrize(
    "make",
    [
        lambda k: _framed(k, b'{"content":"x"}', b"Content-Length: -5"),
        lambda k: _framed(k, b'{"content":"x"}', b"Content-Length: 15\r\nContent-Length: 15"),
        lambda k: _framed(k, b'{"content":"x"}', b"Content-Length: 15\r\nContent-Length: 18"),
        lambda k: _framed(k, b'{"content":"x"}', b"Content-Length: 1x5"),
        lambda k: _post(k, b'f\r\n{"content":"x"}\r\n0\r\n\r\n',
                        extra=b"Transfer-Encoding: chunked\r\n"),  # fmt: skip
        lambda k: _post(k, b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
                        extra=b"Transfer-Encoding: chunked\r\n", close=False),  # fmt: skip
        lambda k: _post(k, b"zz\r\nabc\r\n0\r\n\r\n", length=False,
                        extra=b"Transfer-Encoding: chunked\r\n"),  # fmt: skip
        lambda k: _post(k, b"ffffffffffffffffff\r\nabc\r\n", length=False,
                        extra=b"Transfer-Encoding: chunked\r\n"),  # fmt: skip
        lambda k: _post(k, b"3\r\nabcXX0\r\n\r\n", length=False,
                        extra=b"Transfer-Encoding: chunked\r\n"),  # fmt: skip
    ],
    ids=["negative", "two equal", "two different", "not a number", "chunked and length",
         "smuggling", "bad chunk size", "chunk size overflow", "no CRLF after a chunk"],
)  # fmt: skip
def test_bad_framing_is_a_json_400(server: tuple[Running, str], make: object) -> None:
    """Before: uvicorn's text/plain "Invalid HTTP request received."."""
    s, key = server
    answer = _probe(server, make(key))  # type: ignore[operator]
    assert (answer.status, answer.error_code()) == ("400", "bad_request")
    assert "not valid HTTP/1.1" in answer.json()["error"]["message"]
    assert "/smuggled" not in s.log_text()


def test_a_body_shorter_than_its_length_is_parsed_as_sent(server: tuple[Running, str]) -> None:
    """Held before: the declared length is what is read (then invalid JSON here)."""
    body = b'{"content":"short body"}'
    answer = _probe(server, _framed(server[1], body, b"Content-Length: %d" % (len(body) - 5)))
    assert (answer.status, answer.error_code()) == ("400", "malformed_json")


def test_a_body_cut_short_of_its_length_is_not_run(server: tuple[Running, str]) -> None:
    """Held before: the client's end before the declared length closes the connection, and
    nothing is stored."""
    s, key = server
    body = b'{"content":"never whole"}'
    data = _framed(key, body, b"Content-Length: %d" % (len(body) + 50))
    answer = _probe(server, data, shut=True)
    assert answer.status == "closed"
    assert (
        "never whole"
        not in httpx2.get(
            f"{s.url}/v1/users/alice/memories?limit=500", headers={"Authorization": f"Bearer {key}"}
        ).text
    )


def test_a_chunked_body_without_its_end_is_not_run(server: tuple[Running, str]) -> None:
    answer = _probe(server, _post(server[1], b"3\r\nabc\r\n", length=False,
                                  extra=b"Transfer-Encoding: chunked\r\n"), shut=True)  # fmt: skip
    assert answer.status == "closed"


# --- pipelining --------------------------------------------------------------------------


def _statuses(raw: bytes) -> list[bytes]:
    """The status of every answer on the connection, in order."""
    return re.findall(rb"HTTP/1\.1 (\d{3}) [A-Za-z]", raw)


def test_a_request_pipelined_after_a_refused_one_is_served(server: tuple[Running, str]) -> None:
    """Held before: a 400 on a complete request keeps the connection, the next is served."""
    key = server[1]
    first = _post(key, b'{"content": ', close=False)
    second = request("GET", b"/readyz")
    answer = _probe(server, first + second)
    assert _statuses(answer.raw) == [b"400", b"200"], answer.raw


def test_a_413_closes_the_connection(server: tuple[Running, str]) -> None:
    """Before: the 413 kept the connection open and uvicorn read the whole declared body (any
    size) to reach the pipelined request, which it then served."""
    first = _post(server[1], b"x" * (2 << 20), close=False)
    second = request("GET", b"/readyz")
    answer = _probe(server, first + second)
    assert answer.status == "413" and b"connection: close" in answer.head
    assert _statuses(answer.raw) == [b"413"], answer.raw[-500:]


def test_a_request_pipelined_after_a_bad_frame_is_not_served(
    server: tuple[Running, str],
) -> None:
    """A framing error ends the connection: what follows cannot be trusted to be a request."""
    body = b'{"content":"x"}'
    first = _framed(server[1], body, b"Content-Length: 15\r\nContent-Length: 18")
    answer = _probe(server, first + request("GET", b"/readyz"))
    assert _statuses(answer.raw) == [b"400"], answer.raw
    assert answer.error_code() == "bad_request"
