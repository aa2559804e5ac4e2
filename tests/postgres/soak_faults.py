"""The soak's replicas and the faults it injects into them and into PostgreSQL.

:class:`ReplicaPool` keeps ``size`` ``batonflow serve`` replicas up (one per slot), notes each
process it started (``r1.2.log`` is the second process named ``r1``), and notices a replica
that exited when nobody stopped it: a violation, after which it starts the slot again so the
load goes on. :class:`FaultInjector` picks a fault at random (a seeded ``random.Random``) every
few seconds and notes it in the ledger:

* ``stall``: SIGSTOP a replica for 2-3.5 leases, then SIGCONT (a GC pause, a frozen VM);
* ``term``: SIGTERM a replica (a rolling deploy) and start one in its slot, under the same
  replica id or a new one;
* ``kill``: SIGKILL a replica and start it again (mostly under the same id);
* ``pg_restart``: ``pg_ctl restart -m fast``;
* ``pg_kill``: SIGKILL the postmaster, then start the server again.

Faults come one at a time, so at most one replica is down or stalled at once and the slots hold
three replicas apart from the seconds a replacement takes to start.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from pg_server import PostgresServer, kill_postmaster, restart_fast, start_server
from replicas import Replica
from soak_records import FAULT_KINDS, Fault, Ledger

#: Seconds a replica may take to stop after SIGTERM before it counts as hung.
STOP_TIMEOUT = 30.0


class ReplicaPool:
    """``size`` replica slots on one database, kept filled.

    Args:
        db_url: The shared database.
        folder: Where the replicas' logs go.
        lease: Their ``--lease-seconds``.
        size: How many replicas run at once.
        ledger: Where exits nobody asked for are noted.
    """

    def __init__(self, db_url: str, folder: Path, lease: float, size: int, ledger: Ledger):
        self.db_url = db_url
        self.folder = folder
        self.lease = lease
        self.ledger = ledger
        self.slots: list[Replica | None] = [None] * size
        self.all: list[Replica] = []  # every process started, in order
        self.stopping: set[int] = set()  # pids the injector or the harness stops
        self.stalled: set[int] = set()
        self.lock = threading.Lock()
        self._incarnations: dict[str, int] = {}
        self._names = size

    def new_name(self) -> str:
        """A replica id never used in this soak."""
        self._names += 1
        return f"r{self._names}"

    def start(self, slot: int, name: str, budget: float = 90.0) -> Replica | None:
        """Start replica ``name`` in ``slot``, retrying while the database is not back yet.

        Returns:
            The replica, or ``None`` when it did not start within ``budget`` seconds (noted;
            the supervisor tries the empty slot again later).
        """
        deadline = time.monotonic() + budget
        problem = ""
        while time.monotonic() < deadline:
            k = self._incarnations[name] = self._incarnations.get(name, 0) + 1
            try:
                replica = Replica(
                    name,
                    self.db_url,
                    self.folder,
                    self.lease,
                    log_name=f"{name}.{k}.log",
                    start_timeout=max(5.0, deadline - time.monotonic()),
                )
            except AssertionError as exc:  # it exited (e.g. the database was down): again
                problem = str(exc)
                self.ledger.count("replica starts refused")
                time.sleep(1.0)
                continue
            with self.lock:
                self.slots[slot] = replica
                self.all.append(replica)
            return replica
        self.ledger.note(f"replica {name} did not start within {budget:g} s: {problem[-500:]}")
        return None

    def up(self) -> list[Replica]:
        """The replicas in the slots whose process runs (stalled ones too)."""
        with self.lock:
            return [r for r in self.slots if r is not None and r.proc.poll() is None]

    def pick(self, rng: random.Random, avoid: str | None = None) -> Replica | None:
        """A random running replica, other than the one at ``avoid`` (a URL) when possible."""
        up = self.up()
        others = [r for r in up if r.url != avoid] or up
        return rng.choice(others) if others else None

    def by_pid(self, pid: int) -> Replica | None:
        """The replica process ``pid``, if this pool started it."""
        with self.lock:
            return next((r for r in self.all if r.pid == pid), None)

    def supervise(self) -> None:
        """Note replicas that exited unasked and start their slots again; fill empty slots."""
        for slot, replica in enumerate(list(self.slots)):
            if replica is not None and replica.proc.poll() is None:
                continue
            name = f"r{slot + 1}"
            if replica is not None:
                name = replica.name
                if replica.pid not in self.stopping:
                    self.ledger.violate(
                        "replica exits only when stopped",
                        None,
                        f"replica {replica.log.name} (pid {replica.pid}) exited with code "
                        f"{replica.proc.returncode} though nothing stopped it",
                        (replica.log.name,),
                    )
                    self.stopping.add(replica.pid)  # noted once
            self.start(slot, name)

    def stop(self, replica: Replica, sig: int) -> int | None:
        """Send ``sig`` (SIGTERM or SIGKILL) to ``replica`` and wait for it; its exit code.

        A replica that outlives SIGTERM by :data:`STOP_TIMEOUT` is a violation and is killed.
        """
        self.stopping.add(replica.pid)
        self.stalled.discard(replica.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(replica.pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
            os.kill(replica.pid, sig)
        try:
            return replica.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.ledger.violate(
                "replica stops on SIGTERM",
                None,
                f"replica {replica.log.name} (pid {replica.pid}) still ran {STOP_TIMEOUT:g} s "
                "after SIGTERM; killed",
                (replica.log.name,),
            )
            replica.proc.kill()
            replica.proc.wait(10)
            return None
        finally:
            replica.client.close()

    def stop_all(self) -> None:
        """Stop every replica (continued first if stalled); kill what will not stop."""
        for replica in list(self.all):
            if replica.proc.poll() is None:
                code = self.stop(replica, signal.SIGTERM)
                if code not in (0, None):
                    self.ledger.note(
                        f"replica {replica.log.name} exited with code {code} on its final "
                        f"SIGTERM:\n{replica.tail(8)}"
                    )
            replica.client.close()


class FaultInjector(threading.Thread):
    """A thread that injects one random fault every ``gap`` seconds until ``until``.

    It is also the pool's supervisor: between faults it restarts replicas that exited unasked.

    Args:
        server: The PostgreSQL server to restart and kill.
        pool: The replicas.
        ledger: Where faults (and its own crash, if any) are noted.
        rng: The seeded random source of the faults and their timing.
        until: ``time.monotonic()`` after which it injects no more faults.
        gap: The range of seconds between faults.
        kinds: The faults to choose from.
    """

    def __init__(
        self,
        server: PostgresServer,
        pool: ReplicaPool,
        ledger: Ledger,
        rng: random.Random,
        until: float,
        gap: tuple[float, float] = (3.0, 8.0),
        kinds: tuple[str, ...] = FAULT_KINDS,
    ) -> None:
        super().__init__(name="soak-faults", daemon=True)
        self.server = server
        self.pool = pool
        self.ledger = ledger
        self.rng = rng
        self.until = until
        self.gap = gap
        self.kinds = kinds
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            for _ in range(10_000):  # bounded; the deadline ends it long before
                self._idle(self.rng.uniform(*self.gap))
                if self.halt.is_set() or time.monotonic() >= self.until:
                    return
                kind = self.rng.choice(self.kinds)
                started = time.time()
                target, pid, detail = getattr(self, f"_{kind}")()
                self.ledger.add_fault(Fault(kind, target, pid, started, time.time(), detail))
        except BaseException:
            self.ledger.violate("harness", None, f"the fault injector crashed:\n{_tb()}")
        finally:
            for pid in list(self.pool.stalled):  # never leave a replica stopped
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            self.pool.stalled.clear()

    def _idle(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.halt.is_set():
            self.pool.supervise()
            time.sleep(0.2)

    def _victim(self) -> Any:
        up = self.pool.up()
        if not up:
            return None, -1
        replica = self.rng.choice(up)
        return replica, self.pool.slots.index(replica)

    def _stall(self) -> tuple[str, int | None, str]:
        replica, _ = self._victim()
        if replica is None:
            return "none", None, "no replica up"
        seconds = self.pool.lease * self.rng.uniform(2.0, 3.5)
        self.pool.stalled.add(replica.pid)
        os.kill(replica.pid, signal.SIGSTOP)
        try:
            self._idle(seconds)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(replica.pid, signal.SIGCONT)
            self.pool.stalled.discard(replica.pid)
        return replica.log.name, replica.pid, f"stopped {seconds:.1f} s"

    def _replace(self, sig: int, same_id: float) -> tuple[str, int | None, str]:
        replica, slot = self._victim()
        if replica is None:
            return "none", None, "no replica up"
        code = self.pool.stop(replica, sig)
        if sig == signal.SIGTERM and code not in (0, None):
            self.ledger.count("SIGTERM exits non-zero")
            self.ledger.note(
                f"replica {replica.log.name} exited with code {code} after SIGTERM:\n"
                f"{replica.tail(6)}"
            )
        name = replica.name if self.rng.random() < same_id else self.pool.new_name()
        new = self.pool.start(slot, name)
        started = new.log.name if new is not None else "none (slot left empty)"
        return replica.log.name, replica.pid, f"exit code {code}; started {started}"

    def _term(self) -> tuple[str, int | None, str]:
        return self._replace(signal.SIGTERM, same_id=0.5)

    def _kill(self) -> tuple[str, int | None, str]:
        return self._replace(signal.SIGKILL, same_id=0.7)

    def _pg_restart(self) -> tuple[str, int | None, str]:
        began = time.monotonic()
        try:
            restart_fast(self.server)
        except subprocess.CalledProcessError as exc:
            # pg_ctl gave up waiting: make sure the server is up before going on.
            self.ledger.note(f"pg_ctl restart failed: {exc.stderr!r:.300}; starting it")
            if self.server.postmaster_pid() is None:
                start_server(self.server)
        return "postgres", None, f"fast restart took {time.monotonic() - began:.1f} s"

    def _pg_kill(self) -> tuple[str, int | None, str]:
        began = time.monotonic()
        pid = kill_postmaster(self.server)
        start_server(self.server)
        return "postgres", pid, f"down {time.monotonic() - began:.1f} s"


def _tb() -> str:
    return traceback.format_exc(limit=8)
