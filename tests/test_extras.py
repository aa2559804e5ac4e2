"""Each sub-package that needs an extra says which one to install when it is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from batonflow._extras import MissingDependencyError, require_extra

BLOCK = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
import {module}
"""


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        pytest.param("batonflow.rag", ["qdrant_client"], "rag", id="rag"),
        pytest.param("batonflow.observability", ["opentelemetry.sdk"], "otel", id="otel"),
        pytest.param("batonflow.apps.cli", ["typer"], "cli", id="cli"),
        pytest.param("batonflow.apps.server", ["fastapi"], "server", id="server"),
    ],
)
def test_missing_extra_names_the_install_command(module, blocked, extra):
    """Importing without the extra fails with the pip command that installs it."""
    code = textwrap.dedent(BLOCK.format(blocked=blocked, module=module))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "MissingDependencyError" in last
    assert f"pip install 'batonflow[{extra}]'" in last


def test_require_extra_lists_every_missing_distribution():
    """The message names each missing distribution, and nothing when all are there."""
    require_extra("x", "y", {"json": "json"})
    with pytest.raises(MissingDependencyError, match=r"needs no-such-a, no-such-b, which are"):
        require_extra("x", "y", {"no_such_a": "no-such-a", "no_such_b.sub": "no-such-b"})
    assert issubclass(MissingDependencyError, ImportError)
