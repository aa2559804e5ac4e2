"""Agent-loop benchmark: batonflow's FunctionAgent next to llama-index-core's, by history length.

Usage::

    .venv/bin/python bench/agents_bench.py                  # 10 and 200 turns, 5 rounds
    .venv/bin/python bench/agents_bench.py --turns 10,50,200 --rounds 3 --json out.json

One run is ``turns`` LLM calls that each ask for one tool call, then a final answer: the
history grows by two messages per turn. Both agents get the same offline LLM
(:class:`batonflow.agents.testing.ScriptedLLM`, a llama-index ``FunctionCallingLLM``, streamed
as both agents stream by default) and the same trivial async tool, so what differs is the
agent loop and its engine. Each size is timed alternately (ours, theirs, ours, ...) in this one
process, and each side's best round is kept; the figure is microseconds per turn. The goal of
issue 19 is a ratio (llama-index's time over ours) at 200 turns at least 4x, as at 10.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from batonflow.agents import FunctionAgent as OurAgent
from batonflow.agents import FunctionCallingAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from llama_index.core.agent.workflow import FunctionAgent as LlamaAgent


async def ping(n: int) -> str:
    """Answer a ping.

    Args:
        n: The ping's number.
    """
    return f"pong {n}"


def script(turns: int) -> list[Any]:
    calls: list[Any] = [
        ScriptedResponse(tool_calls=[ScriptedToolCall("ping", {"n": i}, id=f"c{i}")])
        for i in range(turns)
    ]
    return [*calls, "done"]


# Which batonflow agent runs: FunctionAgent (llama-index's API) or FunctionCallingAgent.
AGENT = ["function"]


async def run_ours(turns: int) -> float:
    llm = ScriptedLLM(script(turns))
    cls = OurAgent if AGENT[0] == "function" else FunctionCallingAgent
    agent = cls(tools=[ping], llm=llm)
    started = time.perf_counter()
    output = await agent.run(user_msg="ping", max_iterations=turns + 2)
    elapsed = time.perf_counter() - started
    if str(output) != "done" or len(output.tool_calls) != turns:
        raise AssertionError(f"batonflow run gave {output!r:.200}")
    return elapsed


async def run_llama(turns: int) -> float:
    llm = ScriptedLLM(script(turns))
    agent = LlamaAgent(tools=[ping], llm=llm)
    started = time.perf_counter()
    output = await agent.run(user_msg="ping", max_iterations=turns + 2)
    elapsed = time.perf_counter() - started
    if str(output) != "done" or len(output.tool_calls) != turns:
        raise AssertionError(f"llama-index run gave {output!r:.200}")
    return elapsed


async def measure(turns: int, rounds: int) -> dict[str, float]:
    await run_ours(2)  # warm up both (imports, tokenizer, pydantic schemas)
    await run_llama(2)
    best = {"batonflow": float("inf"), "llama": float("inf")}
    for i in range(rounds):
        order = [("batonflow", run_ours), ("llama", run_llama)]
        for label, fn in order if i % 2 == 0 else order[::-1]:
            gc.collect()
            best[label] = min(best[label], await fn(turns))
    return {
        "turns": turns,
        "batonflow_us_per_turn": best["batonflow"] / (turns + 1) * 1e6,
        "llama_us_per_turn": best["llama"] / (turns + 1) * 1e6,
        "speedup": best["llama"] / best["batonflow"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", default="10,200", help="comma list of turns per run")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per size")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument(
        "--agent",
        choices=["function", "function-calling"],
        default="function",
        help="batonflow's FunctionAgent (default) or its FunctionCallingAgent",
    )
    args = parser.parse_args(argv)
    AGENT[0] = "function" if args.agent == "function" else "function-calling"
    sizes = [int(t) for t in args.turns.split(",") if t.strip()]
    rows = [asyncio.run(measure(n, args.rounds)) for n in sizes]
    print(
        f"python {platform.python_version()}, batonflow {args.agent} agent, {args.rounds} "
        "rounds, best of each"
    )
    print(f"{'turns':>6} {'batonflow us/turn':>18} {'llama us/turn':>14} {'speed-up':>9}")
    for row in rows:
        print(
            f"{row['turns']:>6} {row['batonflow_us_per_turn']:>18.0f} "
            f"{row['llama_us_per_turn']:>14.0f} {row['speedup']:>8.1f}x"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
