"""Port a LlamaIndex Workflows program to batonflow by changing its imports, nothing else.

This is docs/compat.md's import map as code: ``workflows``, ``workflows.<module>``,
``llama_index.core.workflow`` and ``llama_index.utils.workflow`` imports become
``batonflow.core`` imports (a module of the same name where batonflow.core has one, as the map
says). Every other line of the program stays as it is.

Run as a script it prints a program (or runs it, with ``--run``) either as written, for the
anchor, or ported, for batonflow; the anchor's outputs beside the programs are recorded with
``python tests/compat/port.py --record`` from a venv that has llama-index-workflows (and
llama-index-utils-workflow, for the drawing page); batonflow's own output for a page that
diverges on purpose, with ``--record --ported PAGE`` from batonflow's venv. A venv for the
anchor: ``python -m venv V && V/bin/pip install llama-index-workflows==2.26.1
llama-index-core==0.14.25 llama-index-utils-workflow``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "anchor_docs"
#: ``workflows.<name>`` modules that batonflow.core has under the same name.
SAME_NAME_MODULES = {
    "events",
    "context",
    "errors",
    "handler",
    "retry_policy",
    "resource",
    "collect",
    "testing",
    "representation",
    "workflow",
}
_FROM = re.compile(
    r"^(?P<indent>\s*)from (?P<root>workflows|llama_index\.core\.workflow|llama_index\.utils\.workflow)"
    r"(?P<rest>(?:\.\w+)*) import ",
    re.MULTILINE,
)


def _target(root: str, rest: str) -> str:
    module = rest.lstrip(".")
    if root == "workflows" and module in SAME_NAME_MODULES:
        return f"batonflow.core.{module}"
    return "batonflow.core"


def port_imports(source: str) -> str:
    """The program with its LlamaIndex Workflows imports changed to batonflow's."""
    return _FROM.sub(lambda m: f"{m['indent']}from {_target(m['root'], m['rest'])} import ", source)


def run_program(
    program: Path, python: str, *, ported: bool, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one program in a fresh process and a fresh folder; its output is what we compare."""
    source = program.read_text()
    if ported:
        source = port_imports(source)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(cwd or tmp)
        script = folder / program.name
        script.write_text(source)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        env["PYTHONPATH"] = str(PROGRAMS)
        env["PYTHONHASHSEED"] = "0"
        return subprocess.run(
            [python, str(script)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )


def transcript(proc: subprocess.CompletedProcess[str]) -> str:
    """What a program printed, and how it exited (the recorded form)."""
    return f"{proc.stdout}[exit {proc.returncode}]\n"


def report(
    program: Path, proc: subprocess.CompletedProcess[str], *, record: bool, ported: bool
) -> None:
    """Print ``program``'s transcript (its stderr's tail too when it failed); with ``record``
    write it beside the program (``.anchor.out``, or ``.batonflow.out`` when ``ported``)."""
    text = transcript(proc)
    if record:
        suffix = ".batonflow.out" if ported else ".anchor.out"
        program.with_suffix(suffix).write_text(text)
    print(f"=== {program.stem}\n{text}", end="")
    if proc.returncode and proc.stderr:
        print(proc.stderr[-3000:], file=sys.stderr)


def programs() -> list[Path]:
    """The ported documentation pages, one program each."""
    return sorted(p for p in PROGRAMS.glob("*.py") if not p.name.startswith("_"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="page names (default: all)")
    parser.add_argument(
        "--record",
        action="store_true",
        help="write <page>.anchor.out (with --ported: <page>.batonflow.out, for a divergence)",
    )
    parser.add_argument("--ported", action="store_true", help="change the imports first")
    args = parser.parse_args()
    chosen = [p for p in programs() if not args.pages or p.stem in args.pages]
    for program in chosen:
        proc = run_program(program, sys.executable, ported=args.ported)
        report(program, proc, record=args.record, ported=args.ported)


if __name__ == "__main__":
    main()
