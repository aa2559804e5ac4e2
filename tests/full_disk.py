"""A disk that really fills up, for the full-disk tests (a pytest plugin: the ``full_disk`` fixture).

The fixture runs each test twice, once per way of making writes fail for lack of space:

* ``tmpfs``: a 512 KiB tmpfs mounted on a folder. ``fill()`` writes a filler file until the
  kernel answers ``ENOSPC``; ``free()`` deletes it. Needs root and the right to mount (CI runs
  as root); skipped otherwise.
* ``rlimit``: the process's file-size limit (``RLIMIT_FSIZE``, what ``ulimit -f`` sets), which
  any user may lower. ``fill()`` lowers the soft limit to the size of the largest file in the
  folder, so none of them can grow: a write past the limit fails with ``EFBIG`` (``SIGXFSZ``,
  which would kill the process, is ignored meanwhile); ``free()`` puts the limit back. SQLite
  sees the same short or failed writes as on a full disk.

Both act on the test process itself, so code under test in it (a store, a server thread) meets
the full disk; neither is a mock.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


class Disk:
    """A folder whose files can be kept from growing (``fill``) and then allowed to (``free``)."""

    def __init__(self, path: Path, mechanism: str) -> None:
        self.path = path
        self.mechanism = mechanism
        self._filler = path / "filler"
        self._saved: tuple[int, int] | None = None
        self._handler: Any = None

    def fill(self) -> None:
        """Make the disk full: from now on, no file in the folder can grow."""
        if self.mechanism == "tmpfs":
            with open(self._filler, "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 4096)
                except OSError:
                    pass  # ENOSPC: full
            return
        if self._saved is not None:
            return
        largest = max((p.stat().st_size for p in self.path.iterdir() if p.is_file()), default=0)
        self._handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self._saved = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max(largest, 1), self._saved[1]))

    def free(self) -> None:
        """Give the space back."""
        if self.mechanism == "tmpfs":
            self._filler.unlink(missing_ok=True)
            return
        if self._saved is None:
            return
        resource.setrlimit(resource.RLIMIT_FSIZE, self._saved)
        signal.signal(signal.SIGXFSZ, self._handler)
        self._saved = None


def _mount_tmpfs(path: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` on ``path``; the reason it could not, or ``None``."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (CI runs as root); the rlimit variant ran instead"
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return f"cannot mount a tmpfs here ({proc.stderr.strip()}); the rlimit variant ran instead"
    return None


@pytest.fixture(params=["tmpfs", "rlimit"])
def full_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Disk]:
    """A :class:`Disk` in a fresh folder, filled by a tmpfs or by ``RLIMIT_FSIZE``."""
    path = tmp_path / "disk"
    path.mkdir()
    if request.param == "rlimit":
        disk = Disk(path, "rlimit")
        try:
            yield disk
        finally:
            disk.free()
        return
    why = _mount_tmpfs(path, "512k")
    if why is not None:
        pytest.skip(why)
    disk = Disk(path, "tmpfs")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
