"""Errors the command line can find cheaply come before its heavy imports.

llama-index and qdrant-client take seconds to import. A missing collection, a Qdrant server
or a PostgreSQL database that does not answer, a bad ``--workflow`` or a missing path are found
in milliseconds, so the CLI reports them before it loads those packages. Each case runs the
real CLI in a fresh process and lists which heavy modules it imported; a test fails when one of
these paths imports a heavy module again.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

#: Modules that take seconds to import (or start servers) and that these paths must not need.
HEAVY = ("llama_index.core", "qdrant_client", "fastapi", "uvicorn", "numpy", "torch")

#: Runs the CLI as ``python -m batonflow`` does, then prints the heavy modules it imported.
_CLI = f"""
import atexit, runpy, sys
HEAVY = {HEAVY!r}
atexit.register(
    lambda: print("heavy:" + ",".join(m for m in HEAVY if m in sys.modules), file=sys.stderr)
)
sys.argv[0] = "batonflow"
runpy.run_module("batonflow", run_name="__main__", alter_sys=True)
"""


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, set[str]]:
    """Run ``batonflow ARGS``; return (exit code, the error line, heavy modules imported)."""
    proc = subprocess.run(
        [sys.executable, "-c", _CLI, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**_clean_env(), **(env or {})},
    )
    lines = proc.stderr.strip().splitlines()
    heavy = [line for line in lines if line.startswith("heavy:")][-1]
    errors = [line for line in lines if line.startswith("error:")]
    return proc.returncode, errors[-1] if errors else proc.stdout, set(heavy[6:].split(",")) - {""}


def _clean_env() -> dict[str, str]:
    import os

    keep = {k: v for k, v in os.environ.items() if not k.startswith(("BATONFLOW_", "OTEL_"))}
    keep.pop("OPENAI_API_KEY", None)
    return keep


def closed_port() -> int:
    """A local TCP port nothing listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def docs_store(tmp_path: Path) -> Path:
    """A local Qdrant folder holding one (empty) collection, ``docs``."""
    from batonflow.rag import QdrantStore

    where = tmp_path / "withdocs"
    with QdrantStore(path=where, collection="docs") as store:
        store.ensure_collection()
    return where


def test_rag_ask_a_missing_collection(tmp_path: Path, docs_store: Path) -> None:
    """The missing collection is named with those that exist, before llama-index loads."""
    code, error, heavy = cli(
        "rag", "ask", "q", "--qdrant-path", str(docs_store), "-c", "nope", cwd=tmp_path
    )
    assert code == 1
    assert "Collection 'nope' does not exist at" in error
    assert "the collections there are: docs" in error
    assert heavy == set()


def test_rag_ask_an_empty_store_and_run_rag(tmp_path: Path) -> None:
    """A store with no collection says to ingest first; ``run rag`` checks the same first."""
    code, error, heavy = cli("rag", "ask", "q", "--qdrant-path", str(tmp_path / "q"), cwd=tmp_path)
    assert code == 1
    assert "it has no collections yet; ingest documents first: batonflow rag ingest" in error
    assert heavy == set()
    code, error, heavy = cli("run", "rag", "--set", "query=q", cwd=tmp_path)
    assert (code, heavy) == (1, set())
    assert "Collection 'docs' does not exist at .batonflow/qdrant" in error


@pytest.mark.parametrize("command", ["ask", "ingest"])
def test_rag_on_a_qdrant_url_nobody_answers(tmp_path: Path, command: str) -> None:
    """A wrong --qdrant-url is one refused request, reported as the store would, no traceback."""
    url = f"http://127.0.0.1:{closed_port()}"
    target = "q" if command == "ask" else str(tmp_path)
    code, error, heavy = cli("rag", command, target, "--qdrant-url", url, cwd=tmp_path)
    assert code == 1
    assert error.startswith(f"error: Could not reach Qdrant at {url} (")
    assert error.endswith("or leave url= out to use local embedded Qdrant.")
    assert heavy == set()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("rag", "ingest", "nosuch/"), "Path(s) not found: nosuch"),
        (("run", "nosuch"), "Unknown flow 'nosuch'"),
        (("run", "nosuch.mod:Flow"), "Module 'nosuch.mod' was not found"),
        (("serve", "-w", "nope"), "--workflow expects NAME=MODULE:CLASS, got 'nope'"),
        (("serve", "-w", "x=nosuch.mod:Flow"), "Module 'nosuch.mod' was not found"),
        (("serve", "--port", "0", "--db", "{file}/runs.db"), "Cannot open the checkpoint database"),
        (("run", "accumulate", "--durable", "--db", "{file}/runs.db"), "Cannot open the"),
        (("runs", "list", "--db", "{tmp}/none.db"), "No run store at"),
        (("draw", "rag", "-o", "{tmp}/no/such/dir/rag.html"), "Folder "),
        (("draw", "rag", "-o", "{tmp}/rag.png"), "use a .html, .mmd or .md file name"),
        (("run", "joke"), "The 'joke' flow needs an LLM and none is configured; set OPENAI"),
        (("run", "react"), "The 'react' flow needs an LLM and none is configured; set OPENAI"),
    ],
    ids=[
        "ingest-missing-path",
        "run-unknown-flow",
        "run-missing-module",
        "serve-bad-workflow-option",
        "serve-missing-workflow-module",
        "serve-db-under-a-file",
        "run-durable-db-under-a-file",
        "runs-list-no-store",
        "draw-into-a-missing-folder",
        "draw-to-a-png",
        "run-joke-without-a-key",
        "run-react-without-a-key",
    ],
)
def test_bad_references_and_paths_fail_before_heavy_imports(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    """Paths, flow references and run stores are checked before any flow or server loads."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    args = tuple(a.format(file=a_file, tmp=tmp_path) for a in args)
    code, error, heavy = cli(*args, cwd=tmp_path)
    assert code == 1
    assert error.startswith("error: ") and message in error
    assert "Error: " not in error  # the sentence itself, not the exception's class name
    assert heavy == set()


def test_serve_with_a_bad_tracing_setting_says_so_first(tmp_path: Path) -> None:
    """An OTEL_* value that cannot work is reported before the prebuilt flows load."""
    env = {"OTEL_TRACES_EXPORTER": "bogus"}
    code, error, heavy = cli("serve", "--port", "0", cwd=tmp_path, env=env)
    assert code == 1
    assert "Unknown trace exporter 'bogus' in OTEL_TRACES_EXPORTER" in error
    assert heavy == set()


def test_a_local_store_in_use_is_reported_before_the_flows_load(tmp_path: Path) -> None:
    """A folder another process (here: this one) holds open is named, with the way out."""
    from batonflow.rag import QdrantStore

    where = tmp_path / "held"
    with QdrantStore(path=where, collection="docs") as store:
        store.ensure_collection()
        for args in (("rag", "ask", "q"), ("rag", "ingest", str(tmp_path))):
            code, error, heavy = cli(*args, "--qdrant-path", str(where), cwd=tmp_path)
            assert code == 1
            assert f"The local Qdrant folder {str(where)!r} is in use by another process" in error
            assert heavy == set()


def test_a_postgresql_url_nobody_answers_fails_at_once(tmp_path: Path) -> None:
    """A refused PostgreSQL connection gives its reason at once, not after the pool's wait."""
    url = f"postgresql://u@127.0.0.1:{closed_port()}/x"
    for args in (("runs", "show", "r1", "--db", url), ("serve", "--port", "0", "--db", url)):
        code, error, heavy = cli(*args, cwd=tmp_path)
        assert code == 1
        assert f"error: Cannot connect to PostgreSQL at {url} (" in error
        assert "refused" in error.lower()
        assert heavy == set()


def test_help_imports_nothing_heavy(tmp_path: Path) -> None:
    """``batonflow --help`` and a sub-command's help load no flow."""
    for args in (("--help",), ("rag", "ask", "--help"), ("serve", "--help")):
        proc = subprocess.run(
            [sys.executable, "-c", _CLI, *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert proc.returncode == 0 and "Usage" in proc.stdout
        assert proc.stderr.strip().splitlines()[-1] == "heavy:"
