"""A Redis ``buffer=`` URL's password in the errors that reach logs and consoles (session
28's audit). Before: "Redis at 'redis://:hunter2@...' refused the connection" (PostgreSQL's
connection errors hide theirs), and a URL with an unclosed ``[`` was a raw ValueError
("Invalid IPv6 URL") from ``Memory(...)`` instead of a ValidationError."""

from __future__ import annotations

import pytest

from memstrata import Memory, MemstrataError, ValidationError


@pytest.mark.parametrize(
    "url",
    [
        "redis://:hunter2@127.0.0.1:9/0",
        "redis://bob:hunter2@127.0.0.1:9/0?prefix=app1",
        "redis://127.0.0.1:9/0?password=hunter2",
        "rediss://bob:hunter2@127.0.0.1:9",
    ],
)
def test_a_refused_connection_hides_the_password(url: str) -> None:
    with pytest.raises(MemstrataError) as err:
        Memory("memory://", embedder="hashing", background=False, buffer=url)
    assert "hunter2" not in str(err.value) and "refused" in str(err.value)


@pytest.mark.parametrize("url", ["redis://:hunter2@[::1:9/0", "http://:hunter2@h/0"])
def test_a_malformed_url_is_a_validation_error_without_the_password(url: str) -> None:
    with pytest.raises(ValidationError) as err:
        Memory("memory://", embedder="hashing", background=False, buffer=url)
    assert "hunter2" not in str(err.value) and "Redis URL" in str(err.value)
