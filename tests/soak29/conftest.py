"""The fixture of a redis-server of a test alone (tests/servers.py), for the outage tests."""

from servers import own_redis  # noqa: F401
