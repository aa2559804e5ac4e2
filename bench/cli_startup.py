"""How long ``batonflow run`` takes to its first output, as a ratio to ``python -c pass``.

Run with ``.venv/bin/python bench/cli_startup.py [--rounds N]``. Each round starts every
command once, alternating, in a fresh process, and times the first byte it writes (stdout or
stderr) and its exit; the medians are printed as a table. The commands are those a user types
for the flows that need no LLM, so none of them should import llama-index.
"""

from __future__ import annotations

import argparse
import os
import selectors
import statistics
import subprocess
import sys
import time
from pathlib import Path

PYTHON = sys.executable
BATONFLOW = str(Path(PYTHON).with_name("batonflow"))

COMMANDS = {
    "python -c pass": [PYTHON, "-c", "pass"],
    "python -c 'import batonflow.core'": [PYTHON, "-c", "import batonflow.core"],
    "python -c 'import llama_index.core' (avoided)": [PYTHON, "-c", "import llama_index.core"],
    "batonflow --version": [BATONFLOW, "--version"],
    "batonflow run accumulate --set numbers=[1,2]": [
        BATONFLOW,
        "run",
        "accumulate",
        "--set",
        "numbers=[1,2]",
    ],
    "batonflow run guess-number --set target=42": [
        BATONFLOW,
        "run",
        "guess-number",
        "--set",
        "target=42",
    ],
}


def first_output_and_exit(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds to the first byte written, and to the exit, of one run of ``argv``."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    selector.register(proc.stderr, selectors.EVENT_READ)
    first: float | None = None
    open_pipes = 2
    while open_pipes:
        for key, _ in selector.select():
            data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not data:
                selector.unregister(key.fileobj)
                open_pipes -= 1
            elif first is None:
                first = time.perf_counter() - started
    code = proc.wait()
    ended = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {code}")
    return (first if first is not None else ended), ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    firsts: dict[str, list[float]] = {name: [] for name in COMMANDS}
    exits: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.rounds):
        for name, argv in COMMANDS.items():
            first, ended = first_output_and_exit(argv, env)
            firsts[name].append(first)
            exits[name].append(ended)
    floor = statistics.median(exits["python -c pass"])
    print(
        f"median of {args.rounds} rounds; ratio = exit time / `python -c pass` ({floor * 1000:.0f} ms)"
    )
    print(f"{'command':48} {'first output':>13} {'exit':>9} {'ratio':>7}")
    for name in COMMANDS:
        first = statistics.median(firsts[name])
        ended = statistics.median(exits[name])
        print(f"{name:48} {first * 1000:10.0f} ms {ended * 1000:6.0f} ms {ended / floor:6.1f}x")


if __name__ == "__main__":
    main()
