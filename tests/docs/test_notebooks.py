"""docs/notebooks.md runs as a notebook, in a real Jupyter kernel, and shows what it says.

Each ``python`` block is one cell; nbclient executes them with the ``python3`` kernel of this
environment (ipykernel), as Jupyter would.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "notebooks.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _run_page(folder: Path) -> list[Any]:
    cells = [nbformat.v4.new_code_cell(code) for code in BLOCK.findall(PAGE.read_text())]
    notebook = nbformat.v4.new_notebook(cells=cells)
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=600, resources={"metadata": {"path": folder}}
    )
    client.execute()
    return notebook.cells


def _shown(cell: Any) -> list[dict[str, Any]]:
    """What a cell displayed: the data of its display and result outputs."""
    return [
        o["data"] for o in cell.outputs if o["output_type"] in ("display_data", "execute_result")
    ]


@pytest.mark.slow
def test_the_notebook_page_runs_in_a_kernel_and_shows_rich_output(tmp_path: Path) -> None:
    workflow, watched, handler, drawing = _run_page(tmp_path)

    [flow] = _shown(workflow)
    assert "<iframe" in flow["text/html"] and "&lt;svg" in flow["text/html"]
    assert "boil" in flow["text/html"]

    # watch(): one display, updated in place to the final list of events and the result.
    [cell] = _shown(watched)
    text = cell["text/html"]
    assert text.index("boil the water") < text.index("steep for three minutes")
    assert "result: a pot of sencha" in text
    assert not [o for o in watched.outputs if o["output_type"] == "stream"]

    [run] = _shown(handler)
    assert "completed" in run["text/html"] and "a pot of sencha" in run["text/html"]
    assert "what it ran" in run["text/html"]

    [page] = _shown(drawing)
    assert "<iframe" in page["text/html"] and "DOCTYPE" in page["text/html"]
    assert (tmp_path / "brew_run.html").read_text().startswith("<!DOCTYPE html>")
