"""The anchor's documentation examples, ported by their imports only, print what they print there.

Each program in ``anchor_docs/`` is the Python of one page of llama-index-workflows 2.26.1's
documentation (``docs/src/content/docs/llamaagents/workflows/``), completed where the page
leaves things out. ``<page>.anchor.out`` is what it printed on llama-index-workflows
(``python tests/compat/port.py --record`` in a venv that has it). Here each program runs on
batonflow with its imports changed by docs/compat.md's import map and must print exactly that,
or, for a page whose difference is a documented divergence, exactly ``<page>.batonflow.out``.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

import pytest

from .port import PROGRAMS, port_imports, programs, run_program, transcript

COMPAT = Path(__file__).resolve().parents[2] / "docs" / "compat.md"

#: Pages whose batonflow output differs from the anchor's on purpose, and the docs/compat.md
#: headings that say why.
DIVERGENT = {
    "concurrent_execution": ["Steps started together run in another order"],
    "durable_workflows": ["`ctx.to_dict()` inside a step"],
    "human_in_the_loop": ["`wait_for_event` suspends in place"],
    "streaming": ["`verbose=True` lines interleave differently with what the caller prints"],
}


def expected(program: Path) -> Path:
    """The recorded output batonflow must print for ``program``."""
    own = program.with_suffix(".batonflow.out")
    return own if own.exists() else program.with_suffix(".anchor.out")


@pytest.mark.slow
@pytest.mark.parametrize("program", programs(), ids=lambda p: p.stem)
def test_page_prints_what_it_prints_on_the_anchor(program: Path) -> None:
    """A ported page program prints the recorded output, line for line, and exits the same."""
    proc = run_program(program, sys.executable, ported=True)
    got = transcript(proc)
    want = expected(program).read_text()
    if got != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(keepends=True),
                got.splitlines(keepends=True),
                expected(program).name,
                "batonflow",
            )
        )
        pytest.fail(f"{program.stem} printed something else:\n{diff}\n{proc.stderr[-3000:]}")


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("BATONFLOW_ANCHOR_PYTHON"),
    reason="set BATONFLOW_ANCHOR_PYTHON to a python with llama-index-workflows 2.26.1 and "
    "llama-index-utils-workflow to check the recordings",
)
@pytest.mark.parametrize("program", programs(), ids=lambda p: p.stem)
def test_recording_is_what_the_anchor_prints(program: Path) -> None:
    """The program as written still prints its recorded output on llama-index-workflows."""
    proc = run_program(program, os.environ["BATONFLOW_ANCHOR_PYTHON"], ported=False)
    assert transcript(proc) == program.with_suffix(".anchor.out").read_text(), proc.stderr


def test_every_program_has_its_anchor_recording() -> None:
    """No program without the anchor's output, no recording without its program."""
    stems = {p.stem for p in programs()}
    recorded = {p.name.removesuffix(".anchor.out") for p in PROGRAMS.glob("*.anchor.out")}
    assert stems == recorded
    assert len(stems) == 14


def _headings() -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", COMPAT.read_text(), re.MULTILINE)}


@pytest.mark.parametrize("page", sorted(DIVERGENT))
def test_each_divergent_page_is_a_documented_divergence(page: str) -> None:
    """A page with its own batonflow output differs from the anchor's and says where why."""
    own = PROGRAMS / f"{page}.batonflow.out"
    assert own.exists()
    assert own.read_text() != (PROGRAMS / f"{page}.anchor.out").read_text()
    for heading in DIVERGENT[page]:
        assert heading in _headings(), f"docs/compat.md has no section {heading!r}"


def test_only_the_listed_pages_diverge() -> None:
    """Every ``.batonflow.out`` is listed in DIVERGENT, with its reason."""
    own = {p.name.removesuffix(".batonflow.out") for p in PROGRAMS.glob("*.batonflow.out")}
    assert own == set(DIVERGENT)


@pytest.mark.parametrize(
    ("line", "ported"),
    [
        pytest.param(
            "from workflows import Workflow, step", "from batonflow.core import", id="root"
        ),
        pytest.param(
            "from workflows.events import StartEvent",
            "from batonflow.core.events import",
            id="events",
        ),
        pytest.param(
            "from workflows.retry_policy import wait_fixed",
            "from batonflow.core.retry_policy import",
            id="retry_policy",
        ),
        pytest.param(
            "from workflows.decorators import step", "from batonflow.core import", id="decorators"
        ),
        pytest.param(
            "from workflows.context.state_store import DictState",
            "from batonflow.core import",
            id="state_store",
        ),
        pytest.param(
            "from llama_index.core.workflow import Context", "from batonflow.core import", id="core"
        ),
        pytest.param(
            "from llama_index.utils.workflow import (", "from batonflow.core import (", id="utils"
        ),
        pytest.param(
            "    from workflows import Context", "    from batonflow.core import", id="nested"
        ),
    ],
)
def test_port_imports_follows_the_import_map(line: str, ported: str) -> None:
    """Each LlamaIndex import form becomes the batonflow import docs/compat.md names."""
    assert port_imports(line).startswith(ported)


def test_port_imports_changes_nothing_else() -> None:
    """Lines that are not LlamaIndex Workflows imports stay as they are."""
    source = (
        "from llama_index.core.llms import ChatMessage\n"
        "import workflows_extra\n"
        "text = 'from workflows import step'\n"
    )
    assert port_imports(source) == source


@pytest.mark.parametrize("program", programs(), ids=lambda p: p.stem)
def test_ported_programs_differ_only_in_their_imports(program: Path) -> None:
    """Porting a page program touches its import lines and nothing else."""
    before = program.read_text().splitlines()
    after = port_imports(program.read_text()).splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed, f"{program.stem} imports nothing from LlamaIndex Workflows"
    assert all(b.lstrip().startswith("from batonflow.core") for _, b in changed)
