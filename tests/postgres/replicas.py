"""``batonflow serve`` replicas as subprocesses on one database, for the failover tests.

:class:`Replica` starts one (serving ``StepsFlow`` of ``replica_flows.py``), waits until it
listens, and gives its client; it can be killed (SIGKILL), stalled (SIGSTOP, then SIGCONT) or
stopped (SIGTERM). :func:`executions` reads the step log ``StepsFlow`` writes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from batonflow.client import Client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FLOWS = HERE / "replica_flows.py"


class Replica:
    """One ``batonflow serve`` subprocess on the shared database; stderr goes to a file."""

    def __init__(self, name: str, url: str, tmp: Path, lease: float) -> None:
        self.name = name
        self.log = tmp / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        env["PYTHONPATH"] = str(ROOT)
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "batonflow",
                    "serve",
                    "--port",
                    "0",
                    "--db",
                    url,
                    "--replica-id",
                    name,
                    "--lease-seconds",
                    str(lease),
                    "--no-prebuilt",
                    "--quiet",
                    "-w",
                    f"steps={FLOWS}:StepsFlow",
                ],
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 60
        while "batonflow server on " not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"replica {name} did not start:\n{self.log.read_text()}")
            time.sleep(0.05)
        line = self.log.read_text().split("batonflow server on ", 1)[1]
        self.url = line.split()[0]
        self.client = Client(self.url, timeout=30)

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, its leases just expire."""
        self.client.close()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def pause(self) -> None:
        """SIGSTOP: the process stalls as a whole (a frozen VM, a long GC pause)."""
        self.proc.send_signal(signal.SIGSTOP)

    def go_on(self) -> None:
        """SIGCONT: the stalled process wakes up where it stopped."""
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> int:
        """SIGTERM (a clean stop); return the exit code."""
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process would never see it
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def executions(log: Path) -> dict[tuple[str, str], list[int]]:
    """(run id, step) -> the pids that ran it, in order."""
    found: dict[tuple[str, str], list[int]] = {}
    for run_id, step, pid in notes(log):
        found.setdefault((run_id, step), []).append(pid)
    return found


def notes(log: Path) -> list[tuple[str, str, int]]:
    """The step log's lines in the order they were written: (run id, step, pid)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(run_id, step, int(pid)) for run_id, step, pid in (line.split() for line in lines)]
