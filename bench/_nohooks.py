"""An "engine without instrument hooks", built from batonflow's own run loop, for the bench.

The tracing target compares batonflow with tracing off (nothing configured, the default) to the
same engine with no instrument hook call sites at all. That second engine does not exist, so
this module makes it: it parses the methods of ``batonflow.core.engine._runtime.Run`` and of
its collaborators (the classes of ``RUN_CLASSES``), removes every ``if`` whose test reads an
instrument flag (``self._want_*``, ``instruments.wants(...)``), replaces such conditional
expressions by their ``else`` value, sets the ``_want_*`` flags to the constant ``False`` (no
``wants()`` lookups), and compiles those methods again, in their module's own globals. Swapping
them in and out of their classes lets one process time both engines alternately.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import inspect
import textwrap
from typing import Any

from api import Unsupported


def _reads_hook_flag(expr: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Attribute) and (node.attr.startswith("_want_") or node.attr == "wants")
        for node in ast.walk(expr)
    )


class _Strip(ast.NodeTransformer):
    def __init__(self) -> None:
        self.removed = 0

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        if _reads_hook_flag(node.test):
            self.removed += 1
            return node.orelse or [ast.Pass()]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        self.generic_visit(node)
        if _reads_hook_flag(node.test):
            self.removed += 1
            return node.orelse
        return node

    def visit_Assign(self, node: ast.Assign) -> Any:
        self.generic_visit(node)
        if any(isinstance(t, ast.Attribute) and t.attr.startswith("_want_") for t in node.targets):
            # The flags stay (other code may pass them on) but are constants: no hook lookups.
            self.removed += 1
            node.value = ast.Constant(False)
        return node


#: The run and its collaborators: (module of batonflow.core.engine, class name).
RUN_CLASSES = (
    ("_runtime", "Run"),
    ("_lanes", "Executions"),
    ("_executing", "StepRunner"),
    ("_boundary", "Boundaries"),
    ("_branches", "Branches"),
    ("_waiters", "Waits"),
    ("_collect", "Collecting"),
)


def _run_classes() -> list[type]:
    try:
        from batonflow.core import engine
    except ImportError as exc:
        raise Unsupported(f"batonflow.core.engine is not importable ({exc})") from exc
    classes = []
    for module_name, class_name in RUN_CLASSES:
        try:
            module = importlib.import_module(f"{engine.__name__}.{module_name}")
        except ImportError as exc:
            raise Unsupported(f"batonflow.core.engine.{module_name} is missing ({exc})") from exc
        cls = getattr(module, class_name, None)
        if cls is None:
            raise Unsupported(f"batonflow.core.engine.{module_name} has no {class_name}")
        classes.append(cls)
    return classes


def hookless_run_methods() -> tuple[dict[Any, Any], dict[Any, Any], int]:
    """``(stripped, original, sites)``: the run's methods without and with hook call sites,
    keyed by ``(class, name)``.

    ``Run`` and its collaborators live in one module per concept, so each method is parsed
    from its own source and compiled in its own module's globals.
    """
    strip = _Strip()
    stripped: dict[Any, Any] = {}
    original: dict[Any, Any] = {}
    for run_cls in _run_classes():
        for attr, fn in vars(run_cls).items():
            if not inspect.isfunction(fn):
                continue
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            node = tree.body[0]
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            before = strip.removed
            new_fn = strip.visit(node)
            if strip.removed == before:
                continue  # no hook site in this method: keep the original
            module = ast.fix_missing_locations(ast.Module(body=[new_fn], type_ignores=[]))
            namespace: dict[str, Any] = {}
            code = compile(
                module,
                f"<hookless {fn.__module__}.{fn.__qualname__}>",
                "exec",
                flags=__future__.annotations.compiler_flag,  # annotations stay unevaluated
                dont_inherit=True,
            )
            exec(code, fn.__globals__, namespace)
            stripped[(run_cls, attr)] = namespace[node.name]
            original[(run_cls, attr)] = fn
    if not strip.removed:
        raise Unsupported("found no instrument hook call sites in the run's classes")
    return stripped, original, strip.removed


def install(methods: dict[Any, Any]) -> None:
    """Put ``methods`` (keyed by ``(class, name)``) on their classes."""
    for (cls, name), fn in methods.items():
        setattr(cls, name, fn)
