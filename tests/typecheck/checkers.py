"""Running the type checkers on a user's files (tests/typecheck)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The user's program that pins the public API's types.
PROGRAM = Path(__file__).resolve().parent / "public_api.py"


def mypy_strict(*files: Path, cwd: Path, python: str = sys.executable) -> str:
    """Run mypy --strict on ``files`` with ``python``'s packages; returns its report."""
    proc = subprocess.run(
        [python, "-m", "mypy", "--strict", "--no-incremental", *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout
