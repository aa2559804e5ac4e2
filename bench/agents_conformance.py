"""llama-index-core's own agent workflow tests, run against batonflow.agents with imports changed.

Usage (from the project's root; ``GITDIR`` is the git directory of a snapshot of
run-llama/llama_index, or of a fork of it, e.g. one brought here by the search tool's fetch)::

    .venv/bin/python bench/agents_conformance.py --mirror GITDIR                  # batonflow
    .venv/bin/python bench/agents_conformance.py --mirror GITDIR --impl llama-index  # baseline
    .venv/bin/python bench/agents_conformance.py --mirror GITDIR --only test_events.py -v

It reads every test file of ``llama-index-core/tests/agent/workflow/`` at ``--rev`` with
``git show`` into a temporary folder outside the repository (deleted afterwards unless
``--keep-tmp``), rewrites the imports, runs pytest there, and prints one line per file and the
figure, ``agents conformance: P of N pass``. Nothing of llama_index is stored in this
repository; this is a measurement, not part of the test suite (CI has no snapshot).

What ``--impl batonflow`` changes, and nothing else (line numbers are kept):

* ``from llama_index.core.agent.workflow[.<module>] import X`` reads ``X`` from
  ``batonflow.agents`` (docs/agents.md's import map);
* ``from llama_index.core.workflow[.<module>] import X`` and ``from workflows[.<module>]
  import X`` read ``X`` from ``batonflow.core.<module>`` when batonflow has that module and
  name, else from ``batonflow.core`` (docs/compat.md's import map);
* a name batonflow lacks becomes a placeholder: the test that touches it fails with
  ``missing name <X>``, and the report lists the name.

Everything else the tests import (``llama_index.core.llms``, ``.tools``, ``.memory``, their
mock LLMs) is llama-index-core's own, as in a user's program.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TESTS_DIR = "llama-index-core/tests/agent/workflow"
#: Modules whose names come from batonflow.agents.
AGENT_ROOTS = ("llama_index.core.agent.workflow",)
#: Modules whose names come from batonflow.core.
CORE_ROOTS = ("llama_index.core.workflow", "workflows")

#: The helper the rewritten imports call (written next to the tests).
HELPER = '''
"""Names for the rewritten imports: batonflow's, or a placeholder that fails its test."""
import importlib


class HarnessMissingName(Exception):
    pass


class _MissingMeta(type):
    def __getattr__(cls, attr):
        raise HarnessMissingName(f"missing name {cls._name} (from {cls._origin})")

    def __call__(cls, *args, **kwargs):
        raise HarnessMissingName(f"missing name {cls._name} (from {cls._origin})")

    def __instancecheck__(cls, obj):
        raise HarnessMissingName(f"missing name {cls._name} (from {cls._origin})")

    def __getitem__(cls, item):
        raise HarnessMissingName(f"missing name {cls._name} (from {cls._origin})")

    def __mro_entries__(cls, bases):
        raise HarnessMissingName(f"missing name {cls._name} (from {cls._origin})")


def resolve(names, origin, targets):
    out = []
    for name in names:
        for target in targets:
            try:
                module = importlib.import_module(target)
            except ImportError:
                continue
            if hasattr(module, name):
                out.append(getattr(module, name))
                break
        else:
            MISSING.add(f"{name} (from {origin})")
            out.append(_MissingMeta(name, (), {"_name": name, "_origin": origin}))
    return out


MISSING = set()
'''

CONFTEST = """
import os

import pytest


@pytest.fixture(autouse=True)
def set_env_vars():
    # llama-index-core's own tests/conftest.py sets this for every test.
    os.environ["IS_TESTING"] = "1"
    yield
    os.environ.pop("IS_TESTING", None)


def pytest_sessionfinish(session, exitstatus):
    try:
        import _harness
    except ImportError:
        return
    path = os.environ.get("HARNESS_MISSING")
    if path:
        with open(path, "w") as f:
            f.write("\\n".join(sorted(_harness.MISSING)))
"""

PYTEST_INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
timeout = 60
"""


def _target_modules(module: str) -> tuple[str, ...] | None:
    """The batonflow modules to read ``module``'s names from (``None``: leave it)."""
    for root in AGENT_ROOTS:
        if module == root or module.startswith(root + "."):
            return ("batonflow.agents",)
    for root in CORE_ROOTS:
        if module == root or module.startswith(root + "."):
            rest = module[len(root) :].lstrip(".")
            return (f"batonflow.core.{rest}", "batonflow.core") if rest else ("batonflow.core",)
    return None


def rewrite_imports(source: str) -> tuple[str, list[str]]:
    """The test file with its llama-index agent and workflow imports read from batonflow.

    Returns:
        The new source (same line count) and the rewritten import lines, for the report.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        targets = _target_modules(node.module)
        if targets is None:
            continue
        names = [a.name for a in node.names]
        bound = [a.asname or a.name for a in node.names]
        indent = lines[node.lineno - 1][: node.col_offset]
        call = (
            f"{indent}import _harness; ({', '.join(bound)},) = _harness.resolve("
            f"{tuple(names)!r}, {node.module!r}, {targets!r})"
        )
        assert node.end_lineno is not None
        span = node.end_lineno - node.lineno + 1
        edits.append((node.lineno - 1, node.end_lineno, call + "\n" * span))
    changed = []
    for start, end, text in sorted(edits, reverse=True):
        changed.append("".join(lines[start:end]).strip())
        lines[start:end] = [text]
    return "".join(lines), changed


def test_names(source: str) -> list[str]:
    """The test functions of a file (module level, and in ``Test*`` classes)."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.extend(
                f"{node.name}::{f.name}"
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                and f.name.startswith("test")
            )
    return names


def git(gitdir: str, *args: str) -> str:
    """Run git on the snapshot."""
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True, text=True
    ).stdout


@dataclass
class FileResult:
    """The outcome of one upstream test file."""

    name: str
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def parse_junit(path: Path) -> dict[str, FileResult]:
    """Per file, the tests that passed, failed (with the first line of why) and skipped."""
    results: dict[str, FileResult] = {}
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = case.get("name") or "?"
        classname = case.get("classname") or ""
        # A file that failed to collect is reported with no class, under its own name.
        module = (classname.split(".")[0] if classname else name.split(".")[0]) + ".py"
        name = name if classname else "(collection)"
        result = results.setdefault(module, FileResult(module))
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            message = (problem.get("message") or problem.text or "").strip()
            result.failed[name] = message.splitlines()[0][:200] if message else "?"
        elif case.find("skipped") is not None:
            result.skipped.append(name)
        else:
            result.passed.append(name)
    return results


def main(argv: list[str] | None = None) -> int:
    """Extract, rewrite, run, report; exit 0 when the measurement ran."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", required=True, help="git dir of a llama_index snapshot")
    parser.add_argument("--rev", default="HEAD", help="the snapshot's revision (default HEAD)")
    parser.add_argument("--impl", choices=["batonflow", "llama-index"], default="batonflow")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run in")
    parser.add_argument("--only", action="append", default=[], help="a test file name")
    parser.add_argument("--keep-tmp", action="store_true", help="keep the extracted tests")
    parser.add_argument("-v", "--verbose", action="store_true", help="print pytest's output")
    args = parser.parse_args(argv)

    files = [
        f
        for f in git(args.mirror, "ls-tree", "-r", "--name-only", args.rev, TESTS_DIR).split()
        if f.endswith(".py") and Path(f).name.startswith("test_")
    ]
    if args.only:
        files = [f for f in files if Path(f).name in args.only]
    if not files:
        print(f"no test files under {TESTS_DIR} at {args.rev}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="agents-conformance-"))
    try:
        rewrites: Counter[str] = Counter()
        for rel in files:
            source = git(args.mirror, "show", f"{args.rev}:{rel}")
            if args.impl == "batonflow":
                source, changed = rewrite_imports(source)
                rewrites.update(changed)
            (tmp / Path(rel).name).write_text(source)
        (tmp / "_harness.py").write_text(HELPER)
        (tmp / "conftest.py").write_text(CONFTEST)
        (tmp / "pytest.ini").write_text(PYTEST_INI)
        junit = tmp / "junit.xml"
        missing = tmp / "missing.txt"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
        env["HARNESS_MISSING"] = str(missing)
        env["PYTHONPATH"] = str(tmp)
        proc = subprocess.run(
            [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--tb=line",
             "--continue-on-collection-errors", f"--junitxml={junit}", "--rootdir", str(tmp), "-c", str(tmp / "pytest.ini"),
             str(tmp)],
            cwd=tmp, env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if args.verbose:
            print(proc.stdout[-20000:])
        if not junit.exists():
            print(proc.stdout[-5000:], proc.stderr[-5000:], file=sys.stderr)
            return 2
        results = parse_junit(junit)
        for rel in files:
            name = Path(rel).name
            r = results.get(name)
            if r is not None and r.passed + r.skipped == [] and len(r.failed) == 1:
                # A file that failed to collect: each of its tests counts as failed.
                (why,) = r.failed.values()
                tests = test_names(git(args.mirror, "show", f"{args.rev}:{rel}"))
                r.failed = dict.fromkeys(tests or ["(file)"], f"collection failed: {why}")
        total = passed = 0
        print(f"{'file':44} pass fail skip")
        for name in sorted(results):
            r = results[name]
            n = len(r.passed) + len(r.failed) + len(r.skipped)
            total += n
            passed += len(r.passed)
            print(f"{name:44} {len(r.passed):4} {len(r.failed):4} {len(r.skipped):4}")
        for name in sorted(results):
            for test, why in results[name].failed.items():
                print(f"FAIL {name}::{test}: {why}")
            for test in results[name].skipped:
                print(f"SKIP {name}::{test}")
        if missing.exists() and missing.read_text().strip():
            print("names batonflow lacks:", ", ".join(missing.read_text().split("\n")))
        print(f"snapshot {git(args.mirror, 'rev-parse', args.rev).strip()[:12]}, impl {args.impl}")
        print(f"agents conformance: {passed} of {total} pass")
        return 0
    finally:
        if args.keep_tmp:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
