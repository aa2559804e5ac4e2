"""A throw-away PostgreSQL server for the tests: Debian's binaries, a temp dir, a free port.

``pytest_plugins`` in ``tests/conftest.py`` loads this module. The session fixture
``postgres_server`` runs ``initdb`` and ``pg_ctl start`` once per test session (as the
``postgres`` user when the tests run as root: the server refuses to run as root) and stops the
server afterwards; ``postgres_url`` gives each test a database of its own on it.

Where the binaries are missing the tests that need them are skipped with the install command,
except under CI (``CI=true``), where a missing server is a failure: CI must test PostgreSQL.
We start the server ourselves rather than through ``pytest-postgresql`` because the fixture is
short and needs the root-to-``postgres`` switch and per-test databases that we want anyway.

A test that takes a server down (the soak: ``tests/postgres/soak.py``) starts its own with
:func:`running_server` and uses :func:`restart_fast`, :func:`kill_postmaster` and
:func:`start_server`, which keep the server's port and data directory.
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
    #: Whether a commit waits for its WAL to be written: off (fast) for the fixtures; on for
    #: a test that kills the postmaster, or a commit a client was told of may vanish.
    synchronous_commit: bool = False
    #: The server's ``max_connections`` (a test of what a full server does lowers it).
    max_connections: int = 200

    def url(self, database: str = "postgres") -> str:
        """The ``postgresql://`` URL of one database on this server."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.datadir.parent / "server.log"

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the server's log ("" before it has one)."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def postmaster_pid(self) -> int | None:
        """The running postmaster's process id, from its pid file (``None``: not running)."""
        try:
            first = (self.datadir / "postmaster.pid").read_text().split("\n", 1)[0]
            pid = int(first)
        except (OSError, ValueError):
            return None
        if not _alive(pid):
            return None
        return pid


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


def _server_env() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def _pg_ctl(
    server: PostgresServer, action: str, *args: str, check: bool = True, timeout: float = 90
) -> subprocess.CompletedProcess[bytes]:
    """Run ``pg_ctl <action>`` on the server's data directory, with its port and options."""
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError(f"pg_ctl is gone; {INSTALL_HINT}.")
    prefix, _, _ = _as_server_user()
    base = server.datadir.parent
    options = (
        f"-p {server.port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
        f"-c synchronous_commit={'on' if server.synchronous_commit else 'off'} "
        f"-c full_page_writes=off -c max_connections={server.max_connections}"
    )
    return subprocess.run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(server.datadir),
            "-o",
            options,
            "-l",
            str(server.log),
            "-w",
            "-t",
            "60",
            action,
            *args,
        ],
        check=check,
        capture_output=True,
        env=_server_env(),
        timeout=timeout,
    )


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie nobody reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def start_server(server: PostgresServer, timeout: float = 60) -> None:
    """Start the stopped (or killed) ``server`` again on its port and data directory.

    After a SIGKILL of the postmaster its backends take a moment to notice and exit, and a
    new postmaster refuses to start while they hold the shared memory: so this retries.

    Raises:
        RuntimeError: The server did not start within ``timeout`` seconds (with its log).
    """
    deadline = time.monotonic() + timeout
    while True:
        done = _pg_ctl(server, "start", check=False, timeout=timeout + 30)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"PostgreSQL on port {server.port} did not start again within {timeout} s: "
                f"{done.stderr.decode(errors='replace')}\n{server.log_tail()}"
            )
        _remove_stale_locks(server)
        time.sleep(0.3)


def _remove_stale_locks(server: PostgresServer) -> None:
    """Remove the lock files of a postmaster that is dead with all its backends: the data
    directory's ``postmaster.pid`` and the socket's ``.s.PGSQL.<port>.lock``. A new postmaster
    refuses to start while the pid they name is a live process, and a killed postmaster's pid
    is soon another process's under load (``pid_max`` is small here)."""
    try:
        pid = int((server.datadir / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        pid = None
    if pid is not None and (_alive(pid) or _session_alive(pid)):
        return  # alive, or its backends still hold the shared memory: wait for them
    (server.datadir / "postmaster.pid").unlink(missing_ok=True)
    (server.datadir.parent / f".s.PGSQL.{server.port}.lock").unlink(missing_ok=True)


def _session_alive(pid: int) -> bool:
    """Whether a process of ``pid``'s session lives (a postmaster's backends keep its session
    id after it died)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == pid:
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        state, session = fields[0], int(fields[3])
        if state != "Z" and session == pid:
            return True
    return False


def restart_fast(server: PostgresServer) -> None:
    """``pg_ctl restart -m fast``: sessions are ended, the server stops cleanly and starts.

    Raises:
        subprocess.CalledProcessError: pg_ctl failed (its output is on the error).
    """
    _pg_ctl(server, "restart", "-m", "fast")


def kill_postmaster(server: PostgresServer, timeout: float = 30) -> int:
    """SIGKILL the postmaster (no shutdown at all) and wait until it is gone; return its pid.

    The server stays down until :func:`start_server`.

    Raises:
        RuntimeError: No postmaster was running, or it outlived ``timeout``.
    """
    pid = server.postmaster_pid()
    if pid is None:
        raise RuntimeError(f"No PostgreSQL postmaster runs on port {server.port} to kill.")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"The postmaster {pid} outlived SIGKILL by {timeout} s.")
        time.sleep(0.05)
    return pid


def _kill_leftovers(server: PostgresServer) -> None:
    """SIGKILL a postmaster that a failed stop left running."""
    pid = server.postmaster_pid()
    if pid is not None and _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_server(
    *, synchronous_commit: bool = False, max_connections: int = 200
) -> Iterator[PostgresServer]:
    """Start a fresh cluster on a free port and stop it (and remove its files) afterwards.

    Args:
        synchronous_commit: Make each commit wait for its WAL (see
            :attr:`PostgresServer.synchronous_commit`).
        max_connections: The server's ``max_connections`` (three of them are kept for
            superusers, which the tests' role is).
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
    env = _server_env()
    port = _free_port()
    server = PostgresServer("127.0.0.1", port, user, datadir, synchronous_commit, max_connections)
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
        _pg_ctl(server, "start", timeout=90)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = server.log_tail()
        out = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(
            f"could not start a PostgreSQL server: {exc}\n{out.decode(errors='replace')}\n{detail}"
        )
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _pg_ctl(server, "stop", "-m", "immediate", check=False, timeout=60)
        # A postmaster killed by a test leaves its backends to notice; none may outlive us.
        _kill_leftovers(server)
        shutil.rmtree(base, ignore_errors=True)


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
