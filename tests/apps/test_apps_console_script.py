"""The installed ``batonflow`` console script, run as a user runs it: from their own folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("batonflow")

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="the console script is not installed")

FLOW = textwrap.dedent(
    """
    from helper import PREFIX

    from batonflow.core import StartEvent, StopEvent, Workflow, step


    class MyFlow(Workflow):
        @step
        async def go(self, ev: StartEvent) -> StopEvent:
            import late_helper  # imported while the run runs, not at load time

            return StopEvent(result=f"{PREFIX} {late_helper.NAME} {ev.get('who', 'you')}")
    """
)


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI", "OTEL_", "BATONFLOW_")) and k != "PYTHONPATH"
    }
    env.update(extra)
    return env


def batonflow(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=_env(**env),
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: flows/myflow.py importing flows/helper.py and flows/late_helper.py."""
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "helper.py").write_text('PREFIX = "hi"\n')
    (flows / "late_helper.py").write_text('NAME = "from"\n')
    (flows / "myflow.py").write_text(FLOW)
    return tmp_path


def test_file_reference_imports_the_files_siblings(project: Path) -> None:
    """run path/to/file.py:Class works when the file imports modules next to it."""
    proc = batonflow("run", "flows/myflow.py:MyFlow", "--set", "who=ada", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["result"] == "hi from ada"


def test_module_reference_finds_modules_in_the_current_folder(project: Path) -> None:
    """run module:Class finds the module in the folder batonflow is started from."""
    proc = batonflow("run", "myflow:MyFlow", "--json", cwd=project / "flows")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["result"] == "hi from you"
    (project / "flows" / "__init__.py").write_text("")
    dotted = batonflow("run", "flows.myflow:MyFlow", "--json", cwd=project)
    # flows.myflow imports `helper` as a top-level module: that only works from flows/.
    assert dotted.returncode == 1
    assert "ModuleNotFoundError: No module named 'helper'" in dotted.stderr


def test_draw_with_a_file_reference(project: Path) -> None:
    """draw loads file.py:Class the same way run does."""
    proc = batonflow("draw", "flows/myflow.py:MyFlow", "-o", "flow.mmd", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "go" in (project / "flow.mmd").read_text()


def test_missing_module_still_names_the_current_folder(project: Path) -> None:
    """A module that is nowhere is still a one-line error."""
    proc = batonflow("run", "nosuchmod_xyz:Flow", cwd=project)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: Module 'nosuchmod_xyz' was not found; check the part before the colon in "
        "'nosuchmod_xyz:Flow' and that it is importable (PYTHONPATH, current folder)."
    ]


def test_serve_a_file_reference_that_imports_its_siblings(project: Path) -> None:
    """serve -w NAME=path/to/file.py:Class serves a flow whose file imports its neighbours."""
    import httpx

    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--port", "0", "--no-prebuilt", "-w", "my=flows/myflow.py:MyFlow"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=project,
        env=_env(),
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("batonflow server on http://127.0.0.1:"), line
        url = line.split()[3]
        done = httpx.post(
            f"{url}/workflows/my/runs", params={"wait": True}, json={"who": "bo"}, timeout=30
        )
        assert done.json()["result"] == "hi from bo", done.text
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()
