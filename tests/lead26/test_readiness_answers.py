"""``/readyz``'s answer (server/readiness.py, for ``serve`` and ``mcp --transport http``)
by what the store's failure says: ``Retry-After`` only when waiting may help. Before
session 26 a damaged or read-only store was "not ready, retry in 5 s" forever."""

from __future__ import annotations

import json

import anyio
import pytest

from memstrata.errors import EmbeddingMismatchError, StoreError
from memstrata.server.readiness import readiness


class _Backend:
    """The one call ``readiness`` makes, failing as a store would."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    async def ready(self) -> None:
        if self.error is not None:
            raise self.error


def _answer(error: Exception | None) -> tuple[int, dict[str, str], dict[str, object]]:
    async def main() -> tuple[int, dict[str, str], dict[str, object]]:
        r = await readiness(_Backend(error), "serve")  # type: ignore[arg-type]
        return r.status_code, dict(r.headers), json.loads(bytes(r.body))

    return anyio.run(main)


def test_ready() -> None:
    assert _answer(None)[::2] == (200, {"status": "ready"})


@pytest.mark.parametrize(
    "error",
    [StoreError("database is locked", retryable=True), OSError("connection refused")],
)
def test_a_store_that_may_come_back_is_retried(error: Exception) -> None:
    status, headers, body = _answer(error)
    assert status == 503 and int(headers["retry-after"]) > 0
    assert body["error"]["code"] == "not_ready"  # type: ignore[index]


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (StoreError("the file is damaged: restore it from a backup"), "will not help"),
        (EmbeddingMismatchError("the store now holds vectors of 'x'"), "memstrata serve"),
    ],
)
def test_a_store_someone_must_mend_is_not_retried(error: Exception, says: str) -> None:
    status, headers, body = _answer(error)
    assert status == 503 and "retry-after" not in headers
    assert body["error"]["code"] == "not_ready"  # type: ignore[index]
    assert says in body["error"]["message"]  # type: ignore[index]
