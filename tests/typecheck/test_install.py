"""Every documented install type-checks: a user's file outside the repository, mypy and pyright.

Each test installs batonflow into a fresh virtualenv, as ``pip install -e .`` (README, Makefile)
and as a wheel, without its dependencies: those (pydantic, llama-index, mypy...) come from the
test's own environment through a ``.pth`` line, so nothing is downloaded. Only the fresh
environment's install decides where ``batonflow`` is found.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from checkers import PROGRAM, mypy_strict

ROOT = Path(__file__).resolve().parents[2]

#: What the issue's user wrote: every package of batonflow, a workflow subclassed.
USER_APP = '''\
"""A user's app."""

from batonflow.agents import FunctionAgent
from batonflow.client import Client
from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from batonflow.observability import configure_tracing
from batonflow.rag import QdrantStore, RAGWorkflow


class Echo(Workflow):
    """Echoes its topic."""

    @step
    async def echo(self, ctx: Context, ev: StartEvent) -> StopEvent:
        """Echo."""
        return StopEvent(result=ev.topic)


def parts() -> tuple[object, ...]:
    """One of each."""
    return FunctionAgent, Client(), QdrantStore, RAGWorkflow, configure_tracing, Echo()
'''


def fresh_venv(where: Path) -> str:
    """A virtualenv without batonflow that sees this environment's other packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = str(where / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain path line: the .pth files of this environment (its own batonflow install) are
    # not read from there.
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    found = subprocess.run(
        [python, "-c", "import batonflow"], cwd=where, capture_output=True, text=True
    )
    assert found.returncode != 0, "the fresh environment already finds batonflow"
    return python


def pip(*args: str) -> None:
    """Run this environment's pip, offline for batonflow's own build."""
    subprocess.run(
        [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *args],
        check=True,
        timeout=600,
    )


def install_editable(python: str, tmp: Path) -> None:
    """``pip install -e .``, as the README and the Makefile do."""
    pip("--python", python, "install", "--no-deps", "--no-build-isolation", "-e", str(ROOT))


def install_wheel(python: str, tmp: Path) -> None:
    """A wheel built from the repository, installed."""
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(ROOT))
    (wheel,) = (tmp / "dist").glob("batonflow-*.whl")
    pip("--python", python, "install", "--no-deps", str(wheel))


def user_project(tmp: Path) -> Path:
    """A folder outside the repository with the user's files."""
    project = tmp / "project"
    project.mkdir()
    (project / "app.py").write_text(USER_APP)
    shutil.copy(PROGRAM, project / "public_api.py")
    assert not project.resolve().is_relative_to(ROOT)
    return project


@pytest.mark.slow
@pytest.mark.parametrize(
    "install",
    [pytest.param(install_editable, id="editable"), pytest.param(install_wheel, id="wheel")],
)
def test_a_users_file_type_checks_after_install(install, tmp_path: Path) -> None:
    """mypy --strict (and pyright, when it runs here) find every batonflow package and type."""
    python = fresh_venv(tmp_path / "venv")
    install(python, tmp_path)
    project = user_project(tmp_path)
    files = [project / "app.py", project / "public_api.py"]
    assert "no issues found in 2 source files" in mypy_strict(*files, cwd=project, python=python)
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("pyright is not installed (pip install pyright)")
    proc = subprocess.run(
        [pyright, "--pythonpath", python, *map(str, files)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and "0 errors" in proc.stdout, proc.stdout + proc.stderr
