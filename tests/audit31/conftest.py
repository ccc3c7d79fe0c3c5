"""audit26's fixtures: the server suite's (a real SQLite memory, its key store and app, a
live uvicorn server) and a Memory on each store."""

# from where they are defined (audit26's conftest imports them too, and a module's imports
# are not its exports to mypy --strict)
from caller27.conftest import mem  # noqa: F401
from server.conftest import live_server, served  # noqa: F401
