"""Start-up cost of ``batonflow --help`` and ``import batonflow.core``, as ratios, in one run.

Run with ``.venv/bin/python bench/startup.py --workflows-python /tmp/venv-wf/bin/python
--core-python /tmp/venv-core/bin/python``, where ``/tmp/venv-wf`` is a separate virtualenv
holding only llama-index-workflows (``python3 -m venv /tmp/venv-wf && /tmp/venv-wf/bin/pip
install llama-index-workflows``), so that batonflow's own environment never has it, and
``/tmp/venv-core`` one with only batonflow as users install it (``pip install .``). Each round
starts every command once, alternating, in a fresh process.

Two figures answer the goals of issue #28:

* ``batonflow --help`` / ``python -c pass``: the command line's start-up (goal: at most 5x).
* import cost of ``batonflow.core`` / import cost of ``workflows`` (goal: at most 0.5), where an
  import cost is the time of ``python -c "import X"`` less ``python -c pass`` in the same
  virtualenv (each environment's own interpreter start-up is not the library's).

The same ratio for the names a first workflow imports (``Workflow``, ``step``, ``Context``,
``StartEvent``, ``StopEvent``) is printed beside it, and the floor: what importing asyncio and
pydantic and building one model costs, which any engine whose events are pydantic models pays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
BATONFLOW = str(Path(PYTHON).with_name("batonflow"))

FIRST_BATONFLOW = "from batonflow.core import Context, StartEvent, StopEvent, Workflow, step"
#: What any engine with pydantic events pays: asyncio, pydantic, and one model built.
FLOOR = "import asyncio\nfrom pydantic import BaseModel\nclass A(BaseModel):\n    x: int\n"
FIRST_WORKFLOWS = (
    "from workflows import Context, Workflow, step; "
    "from workflows.events import StartEvent, StopEvent"
)


def commands(workflows_python: str | None, core_python: str) -> dict[str, list[str]]:
    """The commands timed, by label."""
    found = {
        "python -c pass": [PYTHON, "-c", "pass"],
        "batonflow --help": [BATONFLOW, "--help"],
        "batonflow runs --help": [BATONFLOW, "runs", "--help"],
        "batonflow --version": [BATONFLOW, "--version"],
        "python -c pass (core venv)": [core_python, "-c", "pass"],
        "import batonflow.core": [core_python, "-c", "import batonflow.core"],
        "first workflow's imports (batonflow)": [core_python, "-c", FIRST_BATONFLOW],
        "floor: asyncio + pydantic + one model": [core_python, "-c", FLOOR],
    }
    if workflows_python:
        found["python -c pass (workflows venv)"] = [workflows_python, "-c", "pass"]
        found["import workflows"] = [workflows_python, "-c", "import workflows"]
        found["first workflow's imports (workflows)"] = [workflows_python, "-c", FIRST_WORKFLOWS]
    return found


def seconds(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from start to exit of one run of ``argv``."""
    started = time.perf_counter()
    # From a neutral folder: in the repository, `python -c` would find its batonflow/ folder.
    proc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    )
    ended = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}: {proc.stderr!r}")
    return ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--workflows-python",
        default=None,
        help="The python of a virtualenv that has llama-index-workflows (e.g. "
        "/tmp/venv-wf/bin/python); without it the import ratio is not measured.",
    )
    parser.add_argument(
        "--core-python",
        default=PYTHON,
        help="The python whose batonflow.core is imported (default: this one). A virtualenv "
        "with only `pip install .` (no extras, not editable) compares like with like: pydantic "
        "reads every installed distribution's entry points on its first model.",
    )
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    timed = commands(args.workflows_python, args.core_python)
    runs: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, argv in timed.items():
            runs[name].append(seconds(argv, env))
    median = {name: statistics.median(values) for name, values in runs.items()}
    floor = median["python -c pass"]
    print(
        f"median of {args.rounds} rounds; ratio = time / `python -c pass` ({floor * 1000:.0f} ms)"
    )
    for name in timed:
        print(f"{name:42} {median[name] * 1000:7.0f} ms {median[name] / floor:6.1f}x")
    print(
        f"\nbatonflow --help: {median['batonflow --help'] / floor:.1f}x python -c pass (goal <= 5)"
    )
    if args.workflows_python:
        wf_floor = median["python -c pass (workflows venv)"]
        core_floor = median["python -c pass (core venv)"]
        ours = median["import batonflow.core"] - core_floor
        theirs = median["import workflows"] - wf_floor
        print(
            f"import cost: batonflow.core {ours * 1000:.0f} ms, workflows {theirs * 1000:.0f} ms: "
            f"ratio {ours / theirs:.2f} (goal <= 0.5)"
        )
        ours = median["first workflow's imports (batonflow)"] - core_floor
        theirs = median["first workflow's imports (workflows)"] - wf_floor
        print(
            f"first workflow's imports: batonflow {ours * 1000:.0f} ms, workflows "
            f"{theirs * 1000:.0f} ms: ratio {ours / theirs:.2f}"
        )
        least = median["floor: asyncio + pydantic + one model"] - core_floor
        print(
            f"the floor (asyncio, pydantic, one model) alone: {least * 1000:.0f} ms, ratio "
            f"{least / theirs:.2f} of import workflows"
        )


if __name__ == "__main__":
    main()
