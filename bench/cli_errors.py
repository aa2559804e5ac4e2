"""Time to the error: how long the ``batonflow`` command line takes to fail on a mistake.

Usage::

    .venv/bin/python bench/cli_errors.py                   # this tree
    .venv/bin/python bench/cli_errors.py --before 991a042  # that commit against this tree

Every case runs the real CLI (``python -m batonflow ...``) in a fresh process, as a user
meets it, and takes its wall time and the CPU time it used (user + system, from
``getrusage``); with ``--before REV``, that commit's packages (laid out as the installed
``batonflow`` package and put first on ``PYTHONPATH`` for its processes) and this tree
alternate, case by case. A case checks that the command failed with an
``error:`` line; the line is printed under the table. The cases are the mistakes a user makes
before anything heavy should load: a missing collection, a wrong Qdrant URL, a refused
PostgreSQL URL, a bad ``--workflow`` option, a missing API key, a bad ``OTEL_*`` setting.
(docs/cli.md, "Errors before the heavy imports", shows one run.)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


#: The package folders of pyproject.toml's package-dir, under ``batonflow/``.
SUBPACKAGES = ("core", "agents", "rag", "observability", "apps", "client", "postgres")


def package_of(rev: str, into: Path) -> Path:
    """Commit ``rev`` laid out as an importable ``batonflow`` package; returns its root."""
    src = into / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    package = into / "pkg" / "batonflow"
    if (src / "src" / "batonflow").is_dir():  # the src/ layout: its links are copied as files
        shutil.copytree(src / "src" / "batonflow", package)
        return into / "pkg"
    shutil.copytree(src / "batonflow", package)
    for name in SUBPACKAGES:
        shutil.copytree(src / name, package / name)
    return into / "pkg"


def cases(work: Path, store: Path, port: int) -> dict[str, list[str]]:
    """Name -> CLI arguments; ``port`` is a local port nothing listens on."""
    closed = f"127.0.0.1:{port}"
    return {
        "batonflow --help": ["--help"],
        "rag ask, missing collection": ["rag", "ask", "q", "--qdrant-path", str(store), "-c", "no"],
        "rag ask, empty store": ["rag", "ask", "q", "--qdrant-path", str(work / "empty")],
        "rag ask, wrong --qdrant-url": ["rag", "ask", "q", "--qdrant-url", f"http://{closed}"],
        "rag ingest, wrong --qdrant-url": [
            "rag",
            "ingest",
            str(work),
            "--qdrant-url",
            f"http://{closed}",
        ],
        "rag ingest, missing path": ["rag", "ingest", str(work / "nosuch")],
        "run rag, missing collection": ["run", "rag", "--set", "query=q"],
        "run joke, no OPENAI_API_KEY": ["run", "joke"],
        "draw rag, into a missing folder": ["draw", "rag", "-o", str(work / "no" / "rag.html")],
        "run, unknown flow": ["run", "nosuch"],
        "run, missing module": ["run", "nosuch.mod:Flow"],
        "runs show, refused PostgreSQL": [
            "runs",
            "show",
            "x",
            "--db",
            f"postgresql://u@{closed}/x",
        ],
        "serve, bad --workflow": ["serve", "-w", "nope"],
        "serve, missing --workflow module": ["serve", "-w", "x=nosuch.mod:Flow"],
        "serve, --db under a file": ["serve", "--port", "0", "--db", str(work / "file" / "r.db")],
        "serve, refused PostgreSQL": ["serve", "--port", "0", "--db", f"postgresql://u@{closed}/x"],
        "serve, bad OTEL_TRACES_EXPORTER": ["serve", "--port", "0"],
    }


def one(args: list[str], work: Path, pythonpath: str | None) -> tuple[float, float, str]:
    """Run the CLI once: wall seconds, CPU seconds, its last ``error:`` line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATONFLOW_", "OTEL_"))}
    env.pop("OPENAI_API_KEY", None)
    if args == ["serve", "--port", "0"]:
        env["OTEL_TRACES_EXPORTER"] = "bogus"
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "batonflow", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=work,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    if args == ["--help"]:
        line = "" if proc.returncode == 0 else f"exit {proc.returncode}"
    elif proc.returncode == 0 or not errors:
        line = f"NOT AN ERROR (exit {proc.returncode})"
    else:
        line = errors[-1]
    return wall, cpu, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="REV", help="a commit of batonflow to compare with")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bf-cli-errors-"))
    try:
        store = work / "withdocs"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "batonflow",
                "rag",
                "ingest",
                str(ROOT / "rag" / "sample_docs"),
                "--qdrant-path",
                str(store),
            ],
            check=True,
            capture_output=True,
            cwd=work,
        )
        (work / "file").write_text("x")
        before = str(package_of(args.before, work / "before")) if args.before else None
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]  # closed again: nothing listens there
        print(f"load average {os.getloadavg()[0]:.2f}")
        if args.before:
            print("| command | before: wall / CPU | after: wall / CPU |\n|---|---:|---:|")
        else:
            print("| command | wall | CPU |\n|---|---:|---:|")
        notes: list[str] = []
        for name, argv in cases(work, store, port).items():
            now = one(argv, work, None)
            if args.before:
                then = one(argv, work, before)
                print(
                    f"| `{name}` | {then[0]:.2f} s / {then[1]:.2f} s | {now[0]:.2f} s / {now[1]:.2f} s |"
                )
                notes.append(f"{name}: before {then[2]!r}; after {now[2]!r}")
            else:
                print(f"| `{name}` | {now[0]:.2f} s | {now[1]:.2f} s |")
                notes.append(f"{name}: {now[2]!r}")
        print(f"load average {os.getloadavg()[0]:.2f}\n")
        print("\n".join(notes))
        return 1 if any("NOT AN ERROR" in n for n in notes) else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
