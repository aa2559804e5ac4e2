"""The import-linter contracts of ``pyproject.toml`` (``make lint``): kept, and able to break."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint(folder: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` run in ``folder`` (which holds ``core/`` and ``pyproject.toml``)."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=folder, capture_output=True, text=True
    )


def test_the_tree_keeps_every_contract() -> None:
    """core/ as it is keeps the rooms' layers and imports no upper package."""
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        pytest.param(
            "engine/_calls.py",
            "from batonflow.agents import ReActAgent",
            "core imports none of the upper packages",
            id="core-imports-agents",
        ),
        pytest.param(
            "engine/_calls.py",
            "import llama_index.core",
            "core imports none of the upper packages",
            id="core-imports-llama-index",
        ),
        pytest.param(
            "data/_json_values.py",
            "from ..engine import _calls",
            "rooms of core import one way",
            id="data-imports-engine",
        ),
        pytest.param(
            "engine/workflow.py",
            "from ..durable import checkpoints as _checkpoints",
            "rooms of core import one way",
            id="engine-imports-durable",
        ),
        pytest.param(
            "engine/_lanes.py",
            "from ..events import Event as _E",
            "never the public re-export modules",
            id="room-imports-a-public-path",
        ),
    ],
)
def test_a_forbidden_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    """One import added against a contract makes lint-imports fail and name that contract."""
    shutil.copytree(ROOT / "core", tmp_path / "core")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = tmp_path / "core" / module
    target.write_text(target.read_text() + f"\n{line}\n")
    result = lint(tmp_path)
    assert result.returncode == 1, result.stdout
    broken = [text for text in result.stdout.splitlines() if "BROKEN" in text]
    assert broken, result.stdout
    assert contract in " ".join(result.stdout.split())


#: The imports core makes inside functions, each for an optional or heavy dependency:
#: (module file, imported module) -> why.
LATE_IMPORTS = {
    ("instruments/instrument.py", "tracing"): "the OpenTelemetry API, ~40 ms, only when tracing",
    ("instruments/instrument.py", "_llama_dispatch"): "llama-index's instrumentation, optional",
    ("durable/_sqlite_schema.py", "resource"): "Unix only",
    ("durable/stores.py", "importlib.metadata"): "heavy, only for store URLs",
    # The drawing room: `import batonflow.core` leaves it unloaded (bench/startup.py); a
    # notebook loads it when it first shows a workflow or a run.
    ("notebook.py", "diagram._html"): "the drawing room, when a notebook first shows one",
    ("notebook.py", "diagram._inline"): "the drawing room, when a notebook first shows one",
    ("notebook.py", "diagram.drawing"): "the drawing room, when a notebook first shows one",
    ("notebook.py", "diagram.representation"): "the drawing room, when a notebook shows one",
    ("notebook.py", "diagram"): "the drawing room, when Drawing is first asked for",
}


def _late_imports(path: Path) -> list[str]:
    """The modules ``path`` imports inside a function body."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found.extend(alias.name for alias in inner.names)
                elif isinstance(inner, ast.ImportFrom):
                    found.append(inner.module or ".")
    return found


def test_core_imports_inside_functions_only_optional_or_heavy_modules() -> None:
    """An import inside a function is for an optional or heavy dependency, not a cycle."""
    late = {
        (str(path.relative_to(ROOT / "core")), module)
        for path in (ROOT / "core").rglob("*.py")
        for module in _late_imports(path)
    }
    assert late == set(LATE_IMPORTS)
