"""crash23's child (a real process killed with SIGKILL at a gate) with ``HISTORY_PAGE`` set
to :data:`conftest.PART`, so that a short file has a history of several parts."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests' packages (a script's path)

import memstrata.portability  # noqa: E402
from crash23.child import main  # noqa: E402
from exphist28.conftest import PART  # noqa: E402

if __name__ == "__main__":
    memstrata.portability.HISTORY_PAGE = PART
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
