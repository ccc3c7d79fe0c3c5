"""``memstrata serve --workers N``: N processes, each accepting on a socket of its own.

uvicorn's own ``--workers`` binds one listening socket and shares it: the process that
wakes first accepts every connection pending at that moment (asyncio accepts up to the
backlog per wake-up), so clients that connect together (a pool, a load test, a proxy
opening its keep-alive connections) all land in one process and the others idle — with
eight clients on two processes, 15 of 16 connections went to one process. Here every
process gets its own listening socket bound to the same address with ``SO_REUSEPORT``,
and the kernel spreads new connections over them by a hash of the client's address and
port. uvicorn's supervisor still restarts a process that dies (on the dead one's socket,
so connections waiting in its queue are kept).

``SO_REUSEPORT`` with load balancing is Linux's (3.9+); elsewhere :func:`run_workers`
returns False and the caller falls back to uvicorn's shared socket.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

__all__ = ["reuseport_supported", "run_workers"]

log = logging.getLogger("memstrata.server")


def reuseport_supported() -> bool:
    import sys

    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def run_workers(config: Any, workers: int) -> bool:
    """Run ``workers`` processes of the uvicorn ``config`` (an app factory import string),
    each on its own ``SO_REUSEPORT`` socket; False (nothing started) where unsupported."""
    if not reuseport_supported():
        return False
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors.multiprocess import Multiprocess, Process

    class OwnSockets(Multiprocess):
        """uvicorn's supervisor with one socket per process (index i: ``sockets[i]``)."""

        def init_processes(self) -> None:
            for sock in self.sockets:
                process = Process(self.config, [sock])
                process.start()
                self.processes.append(process)

        def keep_subprocess_alive(self) -> None:
            if self.should_exit.is_set():
                return
            for idx, process in enumerate(self.processes):
                if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                    continue
                process.kill()
                process.join()
                if process.exitcode == STARTUP_FAILURE:
                    log.error("server process %s failed to start; stopping", process.pid)
                    self.should_exit.set()
                    return
                if self.should_exit.is_set():
                    return
                log.warning("server process %s died; starting another on its socket", process.pid)
                replacement = Process(self.config, [self.sockets[idx]])
                replacement.start()
                self.processes[idx] = replacement

        def restart_all(self) -> None:  # SIGHUP: replace each process on its own socket
            for idx, old in enumerate(self.processes):
                if self.should_exit.is_set():
                    return
                new = Process(self.config, [self.sockets[idx]])
                new.start()
                if not new.wait_until_ready(self.config.timeout_worker_healthcheck):
                    new.kill()
                    new.join()
                    log.error("a new server process was not ready in time; restart aborted")
                    return
                old.terminate()
                old.join()
                self.processes[idx] = new

        def handle_ttin(self) -> None:
            log.warning("the number of processes is fixed (--workers); SIGTTIN ignored")

        def handle_ttou(self) -> None:
            log.warning("the number of processes is fixed (--workers); SIGTTOU ignored")

    sockets = [_listening_socket(config.host, config.port) for _ in range(workers)]
    try:
        OwnSockets(config, sockets=sockets).run()
    finally:
        for sock in sockets:
            sock.close()
    return True
