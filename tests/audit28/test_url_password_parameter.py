"""A PostgreSQL URL's password given as a parameter (``?password=``, libpq's own syntax,
and ``sslpassword=``) was shown in clear where caller27 hid the ``user:password@`` form:
``Memory.stats`` (served by ``GET /v1/users/{user}/stats`` to every key of the tenant) and a
failed connection's error. Session 28's audit; fails before the fix in ``store/url.py``."""

from __future__ import annotations

import pytest

from memstrata import Memory, MemstrataError, Scope
from memstrata.store.url import redact_url


@pytest.mark.parametrize("param", ["password", "sslpassword"])
def test_the_stats_hide_a_password_parameter(pg_url: str, param: str) -> None:
    # the suite's server trusts local connections: any password opens it
    url = f"{pg_url}&{param}=hunter2"
    with Memory(url, embedder="hashing", background=False) as mem:
        for scope in (Scope("acme", "bob"), Scope("acme", "bob").as_caller("carol")):
            stats = mem.stats(scope)
            assert "hunter2" not in str(stats), stats["store"]
            assert f"{param}=***" in stats["store"]


def test_a_failed_connection_hides_a_password_parameter() -> None:
    url = "postgresql://bob@127.0.0.1:9/db?connect_timeout=1&password=hunter2"
    with pytest.raises(MemstrataError) as err:
        Memory(url, embedder="hashing", background=False)
    assert "hunter2" not in str(err.value)


def test_redact_url_keeps_everything_else() -> None:
    url = "postgresql://u:pw@h/db?host=/tmp&password=pw2&passfile=/x#frag"
    assert redact_url(url) == "postgresql://u:***@h/db?host=/tmp&password=***&passfile=/x#frag"
