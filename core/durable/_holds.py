"""Which process holds a run: a name that tells, on this machine, whether its process still lives.

A SQL store without leases (SQLite) records in a run's ``lease_owner`` the *holder* that runs it:
``"<host> <pid> <start> <token>"``, where ``start`` is the process's start time as the kernel
tells it (so a pid reused by a later process is not mistaken for the holder) and ``token`` tells
apart two stores of one process. A second process that wants to resume the run finds the holder
alive and is refused; a holder that was killed (``kill -9``) is found dead and its runs are free.
Within one process, a holder lives while its store is open (:func:`forget_holder` at close).

A holder on another host (or in another container: its host name differs) cannot be checked
from here, and counts as gone: a SQLite file is not shared between machines (SQLite's locks do
not work over network file systems), so such a holder is a process that stopped, e.g. a server
whose container was recreated.
"""

from __future__ import annotations

import os
import socket
import uuid

#: The holders of this process's open stores.
_OPEN: set[str] = set()


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, Linux), or ``None``:
    ``"-"`` where the system does not tell it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None
    except OSError:
        return "-"
    # The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else "-"


def _alive(pid: int, start: str) -> bool:
    """Whether process ``pid``, started at ``start``, still runs on this machine."""
    if os.path.isdir("/proc/self"):
        now = _start_time(pid)
        return now is not None and (start == "-" or now == start)
    try:  # no /proc (macOS): the pid alone tells
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and belongs to someone else
        return True
    return True


def new_holder() -> str:
    """A holder name for one store of this process."""
    pid = os.getpid()
    holder = f"{socket.gethostname()} {pid} {_start_time(pid) or '-'} {uuid.uuid4().hex[:12]}"
    _OPEN.add(holder)
    return holder


def forget_holder(holder: str) -> None:
    """The store of ``holder`` was closed: what it held is free for this process's others."""
    _OPEN.discard(holder)


def holder_alive(holder: str) -> bool:
    """Whether the process that ``holder`` names still runs (see the module docstring)."""
    parts = holder.split(" ")
    if len(parts) != 4 or not parts[1].isdigit():
        return False  # not a holder this module wrote (e.g. a replica's name): not a process
    host, pid, start, _ = parts
    if host != socket.gethostname():
        return False
    if int(pid) == os.getpid():
        return holder in _OPEN
    return _alive(int(pid), start)


def describe(holder: str) -> str:
    """``holder`` for a message: ``process 1234 on host web-1``."""
    parts = holder.split(" ")
    if len(parts) != 4:
        return repr(holder)
    return f"process {parts[1]} on host {parts[0]}"


__all__ = ["describe", "forget_holder", "holder_alive", "new_holder"]
