"""``batonflow serve`` replicas as subprocesses, for the tests and the soak on real PostgreSQL.

A :class:`Replica` serves ``replica_flows.py``'s ``StepsFlow`` (as ``steps``) on a shared
database with a short lease; its stderr (the start-up line, warnings, tracebacks) goes to a
file the tests read when something goes wrong. It can be killed (SIGKILL), stalled (SIGSTOP,
then SIGCONT) or stopped (SIGTERM). :func:`executions` and :func:`notes` read the step log
``StepsFlow`` writes.
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
    """One ``batonflow serve`` subprocess on the shared database; stderr goes to a file.

    Args:
        name: Its ``--replica-id``.
        url: The PostgreSQL URL of the shared database.
        tmp: The folder for its log (and its working directory).
        lease: ``--lease-seconds``.
        log_name: The log file's name in ``tmp`` (default ``<name>.log``); a replica started
            again under the same name gets a log of its own this way.
        start_timeout: Seconds to wait for its start-up line.
        flows: Its ``-w NAME=MODULE:CLASS`` options (default: ``StepsFlow`` as ``steps``);
            a module is imported from ``tmp`` too (its working directory).
        extra: More ``batonflow serve`` options (``--max-running 2``, ``--limit ...``).

    Raises:
        AssertionError: It exited or did not print its address within ``start_timeout``
            (the message holds its log).
    """

    def __init__(
        self,
        name: str,
        url: str,
        tmp: Path,
        lease: float,
        *,
        log_name: str | None = None,
        start_timeout: float = 60.0,
        flows: tuple[str, ...] = (f"steps={FLOWS}:StepsFlow",),
        extra: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.log = tmp / (log_name or f"{name}.log")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        env["PYTHONPATH"] = str(ROOT)
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "batonflow",
                    "serve",
                    "--host",
                    "127.0.0.1",
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
                    *(arg for flow in flows for arg in ("-w", flow)),
                    *extra,
                ],
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + start_timeout
        while "batonflow server on " not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"replica {name} did not start:\n{self.log.read_text()}")
            time.sleep(0.05)
        line = self.log.read_text().split("batonflow server on ", 1)[1]
        self.url = line.split()[0]
        self.client = Client(self.url, timeout=30)

    @property
    def pid(self) -> int:
        """The process id."""
        return self.proc.pid

    def tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of its log."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL it: no shutdown hook runs, its leases just expire."""
        self.client.close()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def pause(self) -> None:
        """SIGSTOP: the process stalls as a whole (a frozen VM, a long GC pause)."""
        self.proc.send_signal(signal.SIGSTOP)

    def go_on(self) -> None:
        """SIGCONT: the stalled process wakes up where it stopped."""
        self.proc.send_signal(signal.SIGCONT)

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM it (a clean stop) and wait; SIGKILL it if it outlives ``timeout``.

        Returns:
            Its exit code.
        """
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process would never see it
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
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
    """The step log's lines in the order they were written: (run id, step, pid); the lines
    also carry the time of each execution, which the soak reads itself."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(parts[0], parts[1], int(parts[2])) for parts in (line.split() for line in lines)]
