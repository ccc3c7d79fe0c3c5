"""No coroutine of the async core calls something that blocks the event loop.

A structural guard beside the timing tests (test_event_loop.py, test_native_overlap.py):
inside every ``async def`` of ``src/memstrata/_async/``, calls that block the thread —
sleeping, blocking file/socket/process I/O, the sync database and HTTP drivers, waiting on a
thread primitive or a future — are refused. What is truly blocking belongs on a thread
(``asyncio.to_thread``, the adapters in ``memstrata/aio/``), not in the source of truth.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "memstrata" / "_async"

# Dotted call names (as written) that block the calling thread.
BLOCKING = {
    "time.sleep",
    "open",
    "input",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "sqlite3.connect",
    "psycopg.connect",
    "psycopg.Connection.connect",
    "redis.Redis",
    "redis.from_url",
    "requests.get",
    "requests.post",
    "urllib.request.urlopen",
    "socket.create_connection",
}
# Methods that block whatever they are called on: a future's result, a thread pool's
# shutdown, a lock's acquire (a waiter's ``wait`` is fine only when awaited). A thread's
# ``join`` cannot be told from ``str.join`` by its name: threads are the shells' business.
BLOCKING_METHODS = {"result", "shutdown", "acquire"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _blocking_calls(tree: ast.Module) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.AsyncFunctionDef):
            continue
        awaited = {id(n.value) for n in ast.walk(fn) if isinstance(n, ast.Await)}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or id(node) in awaited:
                continue
            name = _name(node.func)
            method = name.rsplit(".", 1)[-1] if "." in name else ""
            if name in BLOCKING or (method in BLOCKING_METHODS and method != name):
                found.append((node.lineno, name))
            if method == "wait" and isinstance(node.func, ast.Attribute):
                found.append((node.lineno, name))  # a sync wait (an async one is awaited)
    return found


def test_no_async_function_of_the_core_makes_a_blocking_call() -> None:
    sources = sorted(SOURCE.rglob("*.py"))
    assert len(sources) >= 40  # the whole async core is scanned
    offenders = [
        f"{path.relative_to(SOURCE)}:{line} {name}"
        for path in sources
        for line, name in _blocking_calls(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offenders, f"blocking calls inside async functions: {offenders}"


def test_the_guard_sees_a_blocking_call() -> None:
    """The scan can fail: it flags what it should and leaves awaited waits alone."""
    tree = ast.parse(
        "import time\n"
        "async def bad(ev, fut, t):\n"
        "    time.sleep(1)\n"
        "    fut.result()\n"
        "    t.acquire()\n"
        "    ev.wait()\n"
        "    await ev.wait()\n"
        "    with open('x') as f:\n"
        "        pass\n"
        "def fine():\n"
        "    time.sleep(1)\n"
    )
    assert [name for _, name in _blocking_calls(tree)] == [
        "time.sleep",
        "fut.result",
        "t.acquire",
        "ev.wait",
        "open",
    ]
