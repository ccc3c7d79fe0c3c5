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
falls back to uvicorn's one shared socket.

Each process is a :class:`~memstrata.server.run.GracefulServer`; the supervisor exits 0
when every process stopped cleanly (the statuses of :mod:`memstrata.server.run`), else 1.
"""

from __future__ import annotations

import logging
import signal
import socket

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.server import Server
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from .run import STOP_FORCED, GracefulServer

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


class _Process(Process):
    """uvicorn's worker process, running a :class:`GracefulServer`: it exits 0 when it
    stopped cleanly on its SIGTERM (uvicorn's raised the signal again: -15), else 1."""

    @property
    def server(self) -> Server:
        if self._server is None:
            self._server = GracefulServer(config=self.config)
        return self._server

    def target(self, sockets: list[socket.socket] | None = None) -> None:
        super().target(sockets)
        server = self.server
        if isinstance(server, GracefulServer) and not server.stopped_cleanly:
            raise SystemExit(STOP_FORCED)


class _Supervisor(Multiprocess):
    """uvicorn's supervisor, process i on ``sockets[i]`` (its own, or all the same one)."""

    def init_processes(self) -> None:
        for sock in self.sockets:
            process = _Process(self.config, [sock])
            process.start()
            self.processes.append(process)

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for idx, process in enumerate(self.processes):
            timeout = self.config.timeout_worker_healthcheck
            if process.is_alive(timeout=timeout):
                continue
            hung = process.exitcode is None  # alive, but no answer in time
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                log.error("server process %s failed to start; stopping", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            if hung:
                why = f"did not answer the supervisor in {timeout} s and was killed"
            else:
                why = f"exited with status {process.exitcode}"
            log.warning("server process %s %s; starting another on its socket", process.pid, why)
            replacement = _Process(self.config, [self.sockets[idx]])
            replacement.start()
            self.processes[idx] = replacement

    def restart_all(self) -> None:  # SIGHUP: replace each process on its own socket
        for idx, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = _Process(self.config, [self.sockets[idx]])
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


def run_workers(config: Config, workers: int) -> int:
    """Run ``workers`` processes of the uvicorn ``config`` (an app factory import string),
    each on its own ``SO_REUSEPORT`` socket (else all on one) until stopped; the exit
    status (see the module)."""
    if reuseport_supported():
        sockets = [_listening_socket(config.host, config.port) for _ in range(workers)]
    else:
        sockets = [config.bind_socket()] * workers
    supervisor = _Supervisor(config, sockets=sockets)
    try:
        supervisor.run()
    finally:
        for sock in set(sockets):
            sock.close()
    # -SIGTERM: killed by the supervisor's own SIGTERM after its server had stopped (the
    # group's SIGTERM came first) or before it started: not serving either way, since a
    # serving process handles SIGTERM
    clean = (0, -signal.SIGTERM)
    return 0 if all(p.exitcode in clean for p in supervisor.processes) else STOP_FORCED
