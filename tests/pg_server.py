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
import socket
import subprocess
import tempfile
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
def running_server() -> Iterator[PostgresServer]:
    """Start a fresh cluster on a free port and stop it (and remove its files) afterwards."""
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
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
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
        yield PostgresServer(host="127.0.0.1", port=port, user=user, datadir=datadir)
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            env=env,
            timeout=60,
        )
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
