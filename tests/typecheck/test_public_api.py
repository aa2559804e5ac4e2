"""The public API's types, checked by mypy --strict against llama-index-workflows' (the anchor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from checkers import PROGRAM, mypy_strict

#: The anchor's names for what public_api.py imports from batonflow.core.
ANCHOR_IMPORTS = """\
from workflows import Context, Workflow, step
from workflows.context.state_store import DictState
from workflows.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)
from workflows.handler import WorkflowHandler
"""


def anchor_version(program: str) -> str:
    """``program`` with its batonflow imports replaced by the anchor's."""
    swapped, count = re.subn(
        r"^from batonflow\.core import \([^)]*\)\n", ANCHOR_IMPORTS, program, flags=re.M
    )
    assert count == 1, "public_api.py imports batonflow.core in one `from ... import (...)`"
    return swapped


def test_public_api_types_match_the_anchors(tmp_path: Path) -> None:
    """Every assert_type in public_api.py holds for batonflow and for llama-index-workflows."""
    pytest.importorskip("workflows")
    program = PROGRAM.read_text()
    ours = tmp_path / "ours_api.py"
    ours.write_text(program)
    anchor = tmp_path / "anchor_api.py"
    anchor.write_text(anchor_version(program))
    assert "Success: no issues found in 2 source files" in mypy_strict(ours, anchor, cwd=tmp_path)
