"""llama-index's agent examples, ported by their imports only, print what they print there.

Each program in ``agents/`` is a real example of llama-index's agent docs and notebooks (the
source is named in its docstring), with a scripted LLM for OpenAI. ``<example>.anchor.out`` is
what it prints on llama-index-core's own agents (``python tests/compat/agent_port.py
--record``); here it runs on batonflow.agents with its imports changed by docs/agents.md's
import map and must print exactly that, or, for an example whose difference docs/compat.md
lists, exactly ``<example>.batonflow.out``. llama-index-core is installed with the agents
extra, so the recordings are checked against it too.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from .agent_port import EXAMPLES, examples, port_agent_imports, run_example
from .port import transcript

COMPAT = Path(__file__).resolve().parents[2] / "docs" / "compat.md"

#: Examples whose batonflow output differs on purpose, and the docs/compat.md headings why.
DIVERGENT = {
    "basic_context": ["A conversation continues on its Context"],
    "basic_state": ["The shared state is shown as it is now"],
    "multi_agent": ["The shared state is shown as it is now"],
    "return_direct": ["A conversation continues on its Context"],
    "code_act": ["A conversation continues on its Context"],
    "agents_as_tools": ["The shared state is shown as it is now"],
    "tutorial_state": [
        "A conversation continues on its Context",
        "The shared state is shown as it is now",
    ],
}


def expected(program: Path) -> Path:
    """The recorded output batonflow must print for ``program``."""
    own = program.with_suffix(".batonflow.out")
    return own if own.exists() else program.with_suffix(".anchor.out")


def _diff(want: str, got: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            want.splitlines(keepends=True), got.splitlines(keepends=True), name, "got"
        )
    )


@pytest.mark.slow
@pytest.mark.parametrize("program", examples(), ids=lambda p: p.stem)
def test_example_prints_what_it_prints_on_llama_index(program: Path) -> None:
    """A ported example prints the recorded output, line for line, and exits the same."""
    proc = run_example(program, ported=True)
    got, want = transcript(proc), expected(program).read_text()
    if got != want:
        pytest.fail(f"{_diff(want, got, expected(program).name)}\n{proc.stderr[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("program", examples(), ids=lambda p: p.stem)
def test_recording_is_what_llama_index_prints(program: Path) -> None:
    """The example as written still prints its recording on the installed llama-index-core."""
    proc = run_example(program, ported=False)
    got, want = transcript(proc), program.with_suffix(".anchor.out").read_text()
    assert got == want, f"{_diff(want, got, 'anchor.out')}\n{proc.stderr[-3000:]}"


def test_every_example_has_its_recording() -> None:
    """No example without llama-index's output; none is left out of the count."""
    stems = {p.stem for p in examples()}
    recorded = {p.name.removesuffix(".anchor.out") for p in EXAMPLES.glob("*.anchor.out")}
    assert stems == recorded


def _headings() -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", COMPAT.read_text(), re.MULTILINE)}


@pytest.mark.parametrize("name", sorted(DIVERGENT))
def test_each_divergent_example_is_a_documented_divergence(name: str) -> None:
    """An example with its own batonflow output differs, and docs/compat.md says why."""
    own = EXAMPLES / f"{name}.batonflow.out"
    assert own.read_text() != (EXAMPLES / f"{name}.anchor.out").read_text()
    for heading in DIVERGENT[name]:
        assert heading in _headings(), f"docs/compat.md has no section {heading!r}"


def test_only_the_listed_examples_diverge() -> None:
    """Every ``.batonflow.out`` is listed in DIVERGENT, with its reason."""
    own = {p.name.removesuffix(".batonflow.out") for p in EXAMPLES.glob("*.batonflow.out")}
    assert own == set(DIVERGENT)


@pytest.mark.parametrize("program", examples(), ids=lambda p: p.stem)
def test_ported_examples_differ_only_in_their_imports(program: Path) -> None:
    """Porting touches import lines only, and each becomes a batonflow import."""
    before = program.read_text().splitlines()
    after = port_agent_imports(program.read_text()).splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed
    assert all(b.lstrip().startswith("from batonflow.") for _, b in changed)
