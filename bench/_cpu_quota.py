"""A CPU quota per benchmark process: one cgroup each, created for a figure and removed after.

Production gives each replica cores of its own; a 2-core development machine cannot, and there
a second replica competes with the first (and with PostgreSQL) for the same cores, so "does a
second replica add capacity" cannot be read off it. With a quota of, say, 0.4 core per replica,
each replica is bounded by its own share, the way a replica on a machine of its own is bounded
by that machine, as long as the replicas, PostgreSQL and the load generator together stay under
the cores there are. What a quota does not emulate: the replicas still share the caches, the
memory bandwidth and the loopback network with each other and with PostgreSQL, and a replica
may run its 0.4 core's worth on either core.

The process is put in its group before it runs its program (``preexec_fn``), so every thread
and child it starts is in the group too. cgroup v1's ``cpu`` controller
(``cpu.cfs_quota_us``) and cgroup v2's (``cpu.max``) are both handled. Each group's
``cpu.stat`` tells how often the quota held the process back (``nr_throttled`` of
``nr_periods``, and for how long): the evidence that the replicas were the bound.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Where the cgroup hierarchies are mounted.
ROOT = Path("/sys/fs/cgroup")
#: The scheduler period the quota is a share of, in microseconds (the kernel's default).
PERIOD_US = 100_000


class QuotaUnavailable(RuntimeError):
    """The cgroup ``cpu`` controller cannot be written here."""


@dataclass(frozen=True, slots=True)
class Throttling:
    """What a group's quota did over its life."""

    periods: int
    throttled: int
    throttled_s: float

    @property
    def share(self) -> float:
        """The fraction of the scheduler periods in which the quota stopped the group."""
        return self.throttled / self.periods if self.periods else 0.0


class CpuGroup:
    """One cgroup holding at most ``cores`` of CPU; remove it with :meth:`remove`."""

    def __init__(self, parent: Path, v2: bool, name: str, cores: float) -> None:
        self.path = parent / name
        self.v2 = v2
        quota = max(int(cores * PERIOD_US), 1000)
        try:
            self.path.mkdir()
            if v2:
                (self.path / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            else:
                (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError as exc:
            if self.path.exists():
                self.path.rmdir()
            raise QuotaUnavailable(
                f"--replica-cpu: cannot create the CPU cgroup {self.path} ({exc}). Run the "
                "benchmark as root where the cgroup cpu controller is mounted writable "
                "(a container needs it mounted read-write), or leave --replica-cpu out."
            ) from exc

    def enter(self) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the new process (before it runs) into the group."""
        procs = str(self.path / "cgroup.procs")

        def enter() -> None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        return enter

    def throttling(self) -> Throttling:
        """The group's ``cpu.stat``: periods, throttled periods, throttled seconds."""
        stat = dict(
            line.split(maxsplit=1)
            for line in (self.path / "cpu.stat").read_text().splitlines()
            if line.strip()
        )
        if self.v2:
            seconds = int(stat.get("throttled_usec", 0)) / 1e6
        else:
            seconds = int(stat.get("throttled_time", 0)) / 1e9
        return Throttling(int(stat.get("nr_periods", 0)), int(stat.get("nr_throttled", 0)), seconds)

    def remove(self, deadline: float = 10.0) -> None:
        """Remove the group once its processes have exited (move stragglers to the parent)."""
        end = time.monotonic() + deadline
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                left = (self.path / "cgroup.procs").read_text().split()
                for pid in left:  # a child that outlived its replica: not ours to keep bounded
                    with contextlib.suppress(OSError):
                        (self.path.parent / "cgroup.procs").write_text(pid)
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)


class CpuQuota:
    """Makes :class:`CpuGroup` s of ``cores`` each, under a folder named for this benchmark.

    Raises:
        QuotaUnavailable: neither cgroup v1's nor v2's cpu controller is writable here.
    """

    def __init__(self, cores: float, prefix: str = "batonflow-bench") -> None:
        if not 0 < cores <= os.cpu_count():  # type: ignore[operator]
            raise QuotaUnavailable(
                f"--replica-cpu {cores}: a quota must be more than 0 and at most the machine's "
                f"{os.cpu_count()} cores; pass a share of a core such as 0.4."
            )
        self.cores = cores
        v1 = ROOT / "cpu"
        if (v1 / "cpu.cfs_quota_us").exists():
            self.parent, self.v2 = v1, False
        elif "cpu" in _read(ROOT / "cgroup.controllers").split():
            self.parent, self.v2 = ROOT, True
            if "cpu" not in _read(ROOT / "cgroup.subtree_control").split():
                try:
                    (ROOT / "cgroup.subtree_control").write_text("+cpu")
                except OSError as exc:
                    raise QuotaUnavailable(
                        f"--replica-cpu: cannot enable the cpu controller in {ROOT} ({exc}). "
                        "Run as root with /sys/fs/cgroup writable, or leave --replica-cpu out."
                    ) from exc
        else:
            raise QuotaUnavailable(
                f"--replica-cpu: no cgroup cpu controller under {ROOT} (neither v1's "
                "cpu/cpu.cfs_quota_us nor v2's cpu.max). Mount it (or run where it is), or "
                "leave --replica-cpu out."
            )
        self.prefix = f"{prefix}-{uuid.uuid4().hex[:6]}"

    def group(self, name: str) -> CpuGroup:
        """A new group of this quota, for the process ``name``."""
        return CpuGroup(self.parent, self.v2, f"{self.prefix}-{name}", self.cores)


def end_on_sigterm() -> None:
    """Make SIGTERM end the benchmark as Ctrl-C does, through its ``finally`` blocks: its
    servers stopped and its groups removed, not left behind in ``/sys/fs/cgroup``."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


__all__ = ["CpuGroup", "CpuQuota", "QuotaUnavailable", "Throttling", "end_on_sigterm"]
