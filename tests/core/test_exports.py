"""The public surface of batonflow.core, its import cost, and its dependency direction."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import batonflow.core

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
FORBIDDEN = (
    "batonflow.agents",
    "batonflow.rag",
    "batonflow.observability",
    "batonflow.apps",
    "llama_index",
    "workflows",
    "agents",
    "rag",
    "observability",
    "apps",
)


async def test_public_names_are_pinned() -> None:
    """``batonflow.core.__all__`` matches the checked-in list (update both on purpose)."""
    expected = (Path(__file__).parent / "public_names.txt").read_text().split()
    assert sorted(batonflow.core.__all__) == expected


async def test_every_public_name_is_importable() -> None:
    """Every name in ``__all__`` exists on the module."""
    missing = [n for n in batonflow.core.__all__ if not hasattr(batonflow.core, n)]
    assert missing == []


def _imports(path: Path) -> list[str]:
    """What ``path`` imports; a relative import that climbs above ``core/`` starts with ``..``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    depth = len(path.relative_to(CORE).parts)  # 1 in core/, 2 in a room of core/
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > depth:
            found.append("." * node.level + (node.module or ""))
    return found


async def test_core_imports_nothing_from_upper_layers() -> None:
    """No module of core/ imports agents, rag, observability, apps, llama_index or workflows."""
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for name in _imports(path):
            if name.startswith(".."):
                offenders.append(f"{path.relative_to(CORE)}: relative import {name} leaves core")
            elif any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offenders.append(f"{path.name}: {name}")
    assert offenders == []


async def test_import_is_light() -> None:
    """``import batonflow.core`` loads neither llama_index, numpy nor the OpenTelemetry SDK."""
    code = (
        "import sys, batonflow.core\n"
        "heavy = [m for m in ('llama_index', 'numpy', 'opentelemetry.sdk', 'workflows') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == ""


async def test_hot_path_modules_import_at_module_level() -> None:
    """No import inside a function of the run loop's modules: each such import is an
    ``__import__`` call (about 2 µs) every time the function runs."""
    offenders = []
    hot = ("_runtime.py", "_lanes.py", "_executing.py", "_branches.py", "_waiters.py")
    rest = ("_collect.py", "_boundary.py", "_stream.py", "context.py", "handler.py", "_snapshot.py")
    for name in (*hot, *rest):
        tree = ast.parse((CORE / "engine" / name).read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    offenders.append(f"{name}:{node.lineno} in {func.name}()")
    assert offenders == []


def test_what_a_run_is_reads_in_its_class_and_its_collaborators() -> None:
    """Run's methods are its own (no function of another module bound into its body), and
    its collaborators are objects whose methods live in their classes."""
    from batonflow.core.engine import _runtime

    def borrowed(cls: type) -> list[str]:
        return [
            name
            for name, fn in vars(cls).items()
            if inspect.isfunction(fn) and not fn.__qualname__.startswith(f"{cls.__name__}.")
        ]

    assert borrowed(_runtime.Run) == []
    collaborators = ("Executions", "StepRunner", "Boundaries", "Branches", "Waits", "Collecting")
    for name in collaborators:
        assert borrowed(getattr(_runtime, name)) == [], name
