"""A real `batonflow serve` subprocess, for the tests that start one."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path


def _env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_", "BATONFLOW_"))
    }


class Served:
    """A `batonflow serve` process whose stderr lines are collected as they come."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "batonflow", "serve", "--port", "0", "--db",
             str(tmp_path / "runs.db"), *args],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_env(),
            cwd=tmp_path,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        # a loaded machine may take long to import the prebuilt flows (llama-index, Qdrant)
        match = self.wait_for(r"batonflow server on (http://\S+) ", timeout=180)
        self.url = match[1]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        for line in self.seen:
            if found := re.search(pattern, line):
                return found
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if found := re.search(pattern, line):
                return found
        raise AssertionError(f"no line matching {pattern!r} in:\n" + "\n".join(self.seen))

    def drain(self, pause: float = 0.3) -> list[str]:
        time.sleep(pause)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.seen

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(20)
