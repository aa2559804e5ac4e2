"""A throw-away PostgreSQL server for the tests: Debian's binaries, a temp dir, a free port.

``pytest_plugins`` in ``tests/conftest.py`` loads this module. The session fixture
``postgres_server`` runs ``initdb`` and ``pg_ctl start`` once per test session (as the
``postgres`` user when the tests run as root: the server refuses to run as root) and stops the
server afterwards; ``postgres_url`` gives each test a database of its own on it.

Where the binaries are missing the tests that need them are skipped with the install command,
except under CI (``CI=true``), where a missing server is a failure: CI must test PostgreSQL.
We start the server ourselves rather than through ``pytest-postgresql`` because the fixture is
short and needs the root-to-``postgres`` switch and per-test databases that we want anyway.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL_HINT = "apt-get install postgresql (Debian's package gives initdb and pg_ctl)"


@dataclass(frozen=True)
class PostgresServer:
    """A running throw-away server: where it listens and how to reach its admin database."""

    host: str
    port: int
    user: str
    datadir: Path
    #: ``pg_ctl -o`` options it was started with (to start it again on the same port).
    options: str = ""

    def url(self, database: str = "postgres") -> str:
        """The ``postgresql://`` URL of one database on this server."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: Debian's versioned one, else ``PATH``."""
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        versions = sorted(
            (p for p in root.iterdir() if (p / "bin" / "pg_ctl").exists()),
            key=lambda p: int(p.name) if p.name.isdigit() else 0,
        )
        if versions:
            return versions[-1] / "bin"
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """Command prefix and uid/gid to run the server binaries with (not root)."""
    if os.geteuid() != 0:
        return [], None, None
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail(
            "The tests run as root and there is no 'postgres' user to run the PostgreSQL "
            f"server as; {INSTALL_HINT} creates it."
        )
    return ["runuser", "-u", "postgres", "--"], pw.pw_uid, pw.pw_gid


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI must run the PostgreSQL tests: {INSTALL_HINT}.")
    pytest.skip(f"{reason}; {INSTALL_HINT}")


@contextlib.contextmanager
def running_server(*, crash_safe: bool = False) -> Iterator[PostgresServer]:
    """Start a fresh cluster on a free port and stop it (and remove its files) afterwards.

    ``crash_safe``: commits survive a killed postmaster (``synchronous_commit`` on; the
    speed-ups otherwise lose the last commits when it dies, as documented).
    """
    bindir = find_bindir()
    if bindir is None:
        _missing("PostgreSQL server binaries (initdb, pg_ctl) not found")
        raise AssertionError("unreachable")
    prefix, uid, gid = _as_server_user()
    base = Path(tempfile.mkdtemp(prefix="batonflow-pg-"))
    datadir = base / "data"
    if uid is not None and gid is not None:
        os.chown(base, uid, gid)
    user = "batonflow"
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    port = _free_port()
    try:
        subprocess.run(
            [
                *prefix,
                str(bindir / "initdb"),
                "-D",
                str(datadir),
                "-U",
                user,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
        )
        options = (
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c synchronous_commit={'on' if crash_safe else 'off'} -c full_page_writes=off "
            "-c max_connections=200"
        )
        subprocess.run(
            [
                *prefix,
                str(bindir / "pg_ctl"),
                "-D",
                str(datadir),
                "-o",
                options,
                "-l",
                str(base / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=True,
            capture_output=True,
            env=env,
            timeout=90,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = base / "server.log"
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        out = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(
            f"could not start a PostgreSQL server: {exc}\n{out.decode(errors='replace')}\n{detail}"
        )
    try:
        yield PostgresServer(
            host="127.0.0.1", port=port, user=user, datadir=datadir, options=options
        )
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            env=env,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)


def _pg_ctl(server: PostgresServer, *args: str) -> None:
    bindir = find_bindir()
    assert bindir is not None
    prefix, _, _ = _as_server_user()
    subprocess.run(
        [*prefix, str(bindir / "pg_ctl"), "-D", str(server.datadir), *args],
        check=True,
        capture_output=True,
        env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
        timeout=90,
    )


def restart_fast(server: PostgresServer) -> None:
    """``pg_ctl restart -m fast``: sessions are ended, the server is back when this returns."""
    # -l: the new postmaster must not inherit our pipes (run() would wait for it to exit).
    log = server.datadir.parent / "server.log"
    _pg_ctl(server, "-m", "fast", "-l", str(log), "-w", "-t", "60", "restart")


def kill_postmaster(server: PostgresServer) -> None:
    """SIGKILL the server's postmaster, and wait until its orphaned backends are gone (they
    exit on their own when they notice), so that :func:`start_again` can start it."""
    pid = int((server.datadir / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _children_of(pid) or _alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError("the killed postmaster's backends did not exit within 30 s")
        time.sleep(0.05)
    # A new postmaster refuses to start while the old one's pid exists, even as a zombie
    # that this container's init has not reaped yet: the lock file is stale, remove it.
    deadline = time.monotonic() + 2
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    _remove_lock_files(server)


def _remove_lock_files(server: PostgresServer) -> None:
    """Remove the lock files of a postmaster that is dead: the data directory's
    ``postmaster.pid`` and the socket's ``.s.PGSQL.<port>.lock`` (in the socket directory, the
    data directory's parent). A new postmaster refuses to start while the pid either names is
    a live process, and a killed postmaster's pid is soon another process's under load."""
    (server.datadir / "postmaster.pid").unlink(missing_ok=True)
    (server.datadir.parent / f".s.PGSQL.{server.port}.lock").unlink(missing_ok=True)


def start_again(server: PostgresServer, deadline: float = 60.0) -> None:
    """Start a stopped (or killed) server again on its data directory and port.

    A start that fails (the port still held by a dying process, a lock file left behind) is
    tried again until ``deadline`` seconds have passed; then the error quotes the server log.
    """
    log = server.datadir.parent / "server.log"
    end = time.monotonic() + deadline
    while True:
        seen = log.stat().st_size if log.exists() else 0
        try:
            _pg_ctl(server, "-o", server.options, "-l", str(log), "-w", "-t", "60", "start")
            return
        except subprocess.CalledProcessError as exc:
            with open(log, "rb") as f:
                f.seek(seen)
                tail = f.read().decode(errors="replace")[-2000:]
            if time.monotonic() > end:
                raise AssertionError(
                    f"pg_ctl start failed (exit {exc.returncode}) for {deadline:g} s: "
                    f"{exc.stderr.decode(errors='replace').strip()}\nserver log:\n{tail}"
                ) from exc
            if not _postmaster_alive(server):
                _remove_lock_files(server)  # left by the postmaster that just failed
            time.sleep(0.2)


def _postmaster_alive(server: PostgresServer) -> bool:
    try:
        pid = int((server.datadir / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return False
    return _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _children_of(pid: int) -> list[int]:
    """Live processes whose parent was ``pid`` or that were re-parented from it (same
    session: PostgreSQL's backends keep the postmaster's session id)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().split(") ", 1)[1].split()
        except (FileNotFoundError, IndexError, ProcessLookupError):
            continue
        state, ppid, _pgrp, session = fields[0], int(fields[1]), fields[2], int(fields[3])
        if state != "Z" and (ppid == pid or session == pid) and int(entry.name) != pid:
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test session."""
    with running_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the session's server, dropped after the test."""
    psycopg = pytest.importorskip("psycopg", reason="pip install 'batonflow[postgres]'")
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_server.url(name)
    finally:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
