"""Start-up cost of ``batonflow --help`` and ``import batonflow.core``, as ratios, in one run.

Run with ``.venv/bin/python bench/startup.py --workflows-python /tmp/venv-wf/bin/python
--core-python /tmp/venv-core/bin/python --cli-python /tmp/venv-cli/bin/python``, where
``/tmp/venv-wf`` is a separate virtualenv holding only llama-index-workflows (``python3 -m venv
/tmp/venv-wf && /tmp/venv-wf/bin/pip install llama-index-workflows``), so that batonflow's own
environment never has it, ``/tmp/venv-core`` one with only batonflow as users install it
(``pip install .``) and ``/tmp/venv-cli`` one with the command line as users install it
(``pip install '.[cli]'``). Installed, not editable: pip compiles the modules at install time,
as users get them (an editable checkout under ``PYTHONDONTWRITEBYTECODE`` compiles every module
at every start). Each round starts every command once, alternating, in a fresh process.

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
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable

FIRST_BATONFLOW = "from batonflow.core import Context, StartEvent, StopEvent, Workflow, step"
#: What any engine with pydantic events pays: asyncio, pydantic, and one model built.
FLOOR = "import asyncio\nfrom pydantic import BaseModel\nclass A(BaseModel):\n    x: int\n"
#: What any typer command line with rich help pays before its own commands: typer and its help
#: renderer (``typer.rich_utils``, without rich's Markdown and traceback modules, as batonflow
#: loads it), and the console it prints with.
FLOOR_CLI = (
    "from batonflow.apps._typer_help import load_help_renderer\n"
    "load_help_renderer()\n"
    "import rich.console"
)
FIRST_WORKFLOWS = (
    "from workflows import Context, Workflow, step; "
    "from workflows.events import StartEvent, StopEvent"
)
#: A first workflow defined and run to its end: one event class of its own, two steps. What the
#: import leaves for first use (pydantic building the engine's events) is paid here.
FIRST_RUN = """
import asyncio
{imports}

class Doubled(Event):
    value: int

class Flow(Workflow):
    @step
    async def double(self, ev: StartEvent) -> Doubled:
        return Doubled(value=ev.n * 2)

    @step
    async def finish(self, ev: Doubled) -> StopEvent:
        return StopEvent(result=ev.value)

async def main():
    return await Flow().run(n=2)

assert asyncio.run(main()) == 4
"""
FIRST_RUN_BATONFLOW = FIRST_RUN.format(
    imports="from batonflow.core import Event, StartEvent, StopEvent, Workflow, step"
)
FIRST_RUN_WORKFLOWS = FIRST_RUN.format(
    imports="from workflows import Workflow, step\n"
    "from workflows.events import Event, StartEvent, StopEvent"
)


def batonflow_commands(core_python: str, cli_python: str, tag: str = "") -> dict[str, list[str]]:
    """batonflow's commands timed, by label; ``tag`` marks a second install (``" [before]"``)."""
    batonflow = str(Path(cli_python).with_name("batonflow"))
    return {
        f"python -c pass (cli venv){tag}": [cli_python, "-c", "pass"],
        f"batonflow --help{tag}": [batonflow, "--help"],
        f"batonflow runs --help{tag}": [batonflow, "runs", "--help"],
        f"batonflow --version{tag}": [batonflow, "--version"],
        f"python -c pass (core venv){tag}": [core_python, "-c", "pass"],
        f"import batonflow.core{tag}": [core_python, "-c", "import batonflow.core"],
        f"first workflow's imports (batonflow){tag}": [core_python, "-c", FIRST_BATONFLOW],
        f"first workflow run (batonflow){tag}": [core_python, "-c", FIRST_RUN_BATONFLOW],
        f"floor: asyncio + pydantic + one model{tag}": [core_python, "-c", FLOOR],
    }


def workflows_commands(workflows_python: str) -> dict[str, list[str]]:
    """llama-index-workflows' commands timed, by label."""
    return {
        "python -c pass (workflows venv)": [workflows_python, "-c", "pass"],
        "import workflows": [workflows_python, "-c", "import workflows"],
        "first workflow's imports (workflows)": [workflows_python, "-c", FIRST_WORKFLOWS],
        "first workflow run (workflows)": [workflows_python, "-c", FIRST_RUN_WORKFLOWS],
    }


def seconds(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from start to exit of one run of ``argv``, and the CPU seconds it used.

    CPU time (user + system) counts only the process's own work: on a shared machine it moves
    far less than wall time, which also counts the time other processes held the cores.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # From a neutral folder: in the repository, `python -c` would find its batonflow/ folder.
    proc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    )
    ended = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}: {proc.stderr!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ended, cpu


def report(median: dict[str, float], tag: str, with_workflows: bool) -> None:
    """Print the goals' ratios of one install (``tag``) from the medians."""
    cli_floor = median[f"python -c pass (cli venv){tag}"]
    help_ratio = median[f"batonflow --help{tag}"] / cli_floor
    print(f"\n{tag.strip() or 'this install'}:")
    print(f"batonflow --help: {help_ratio:.1f}x python -c pass (goal <= 5)")
    if not tag:
        typer_ratio = median["floor: typer + its help renderer"] / cli_floor
        print(f"floor: typer + its help renderer: {typer_ratio:.1f}x python -c pass")
    if not with_workflows:
        return
    wf_floor = median["python -c pass (workflows venv)"]
    core_floor = median[f"python -c pass (core venv){tag}"]
    pairs = [
        (
            "import cost: batonflow.core",
            "import batonflow.core",
            "import workflows",
            " (goal <= 0.5)",
        ),
        (
            "first workflow's imports",
            "first workflow's imports (batonflow)",
            "first workflow's imports (workflows)",
            "",
        ),
        (
            "first workflow defined and run",
            "first workflow run (batonflow)",
            "first workflow run (workflows)",
            "",
        ),
        (
            "floor: asyncio + pydantic + one model",
            "floor: asyncio + pydantic + one model",
            "import workflows",
            " (of import workflows)",
        ),
    ]
    for title, ours_name, theirs_name, goal in pairs:
        ours = median[ours_name + tag] - core_floor
        theirs = median[theirs_name] - wf_floor
        print(
            f"{title}: batonflow {ours * 1000:.0f} ms, workflows {theirs * 1000:.0f} ms: "
            f"ratio {ours / theirs:.2f}{goal}"
        )


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
    parser.add_argument(
        "--cli-python",
        default=PYTHON,
        help="The python whose `batonflow` console script is started (default: this one). A "
        "virtualenv with `pip install '.[cli]'` (not editable) measures what users start.",
    )
    parser.add_argument(
        "--before-core-python",
        default=None,
        help="Optional: a second install to compare in the same run (e.g. of an older commit); "
        "its rows are tagged [before]. Give --before-cli-python with it.",
    )
    parser.add_argument("--before-cli-python", default=None)
    args = parser.parse_args()
    if (args.before_core_python is None) != (args.before_cli_python is None):
        parser.error("give both --before-core-python and --before-cli-python, or neither")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    timed = batonflow_commands(args.core_python, args.cli_python)
    tags = [""]
    if args.before_core_python:
        timed |= batonflow_commands(args.before_core_python, args.before_cli_python, " [before]")
        tags.append(" [before]")
    timed["floor: typer + its help renderer"] = [args.cli_python, "-c", FLOOR_CLI]
    if args.workflows_python:
        timed |= workflows_commands(args.workflows_python)
    runs: dict[str, list[float]] = {name: [] for name in timed}
    cpu_runs: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, argv in timed.items():
            wall, cpu = seconds(argv, env)
            runs[name].append(wall)
            cpu_runs[name].append(cpu)
    for kind, measured in (("wall time", runs), ("CPU time (user + system)", cpu_runs)):
        median = {name: statistics.median(values) for name, values in measured.items()}
        floor = median["python -c pass (cli venv)"]
        print(
            f"\n== {kind}: median of {args.rounds} rounds; ratio = time / `python -c pass` "
            f"({floor * 1000:.0f} ms)"
        )
        for name in timed:
            print(f"{name:50} {median[name] * 1000:7.0f} ms {median[name] / floor:6.1f}x")
        for tag in tags:
            report(median, tag, bool(args.workflows_python))


if __name__ == "__main__":
    main()
