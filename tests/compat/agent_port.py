"""Port a llama-index agent program to batonflow.agents by changing its imports, nothing else.

docs/agents.md's import map as code: ``llama_index.core.agent.workflow[.<module>]`` imports
become ``batonflow.agents`` imports, and the workflow imports follow docs/compat.md's map
(:func:`tests.compat.port.port_imports`). The programs in ``agents/`` are llama-index's agent
notebooks and guides, each completed with a scripted LLM (``agents/_llm.py``).

``python tests/compat/agent_port.py --record`` runs each program as written (llama-index-core's
agents, installed with batonflow's agents extra) and writes ``<example>.anchor.out``;
``--record --ported EXAMPLE`` writes batonflow's own ``<example>.batonflow.out`` for an example
whose difference docs/compat.md lists.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from .port import port_imports, report
except ImportError:  # run as a script
    from port import port_imports, report  # type: ignore[no-redef]

EXAMPLES = Path(__file__).resolve().parent / "agents"
_AGENT_FROM = re.compile(
    r"^(?P<indent>\s*)from llama_index\.core\.agent\.workflow(?:\.\w+)* import ", re.MULTILINE
)


def port_agent_imports(source: str) -> str:
    """The program with its llama-index agent and workflow imports changed to batonflow's."""
    return port_imports(
        _AGENT_FROM.sub(lambda m: f"{m['indent']}from batonflow.agents import ", source)
    )


def run_example(program: Path, *, ported: bool) -> subprocess.CompletedProcess[str]:
    """Run one example in a fresh process and folder; its stdout is what is compared."""
    source = program.read_text()
    if ported:
        source = port_agent_imports(source)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / program.name
        script.write_text(source)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        env["PYTHONPATH"] = str(EXAMPLES)
        env["PYTHONHASHSEED"] = "0"
        return subprocess.run(
            [sys.executable, "-W", "ignore", str(script)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )


def examples() -> list[Path]:
    """The ported examples, one program each."""
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="example names (default: all)")
    parser.add_argument("--record", action="store_true", help="write the .out files")
    parser.add_argument("--ported", action="store_true", help="run on batonflow.agents")
    args = parser.parse_args()
    for program in examples():
        if args.names and program.stem not in args.names:
            continue
        proc = run_example(program, ported=args.ported)
        report(program, proc, record=args.record, ported=args.ported)


if __name__ == "__main__":
    main()
