"""Every ``python`` code block in ``docs/*.md`` and ``README.md`` runs, so the docs cannot rot.

The blocks of one page run in order, in one fresh Python process, as one script (later blocks
see what earlier ones defined). A block whose first line is ``# doc: skip`` is shown to readers
but not run (shell-like fragments, things that need a network). Pages run in a temporary folder
with no OpenAI key, so examples must work offline. A page is stopped only when it is stuck (it
and its child processes used no CPU for ``STUCK_AFTER`` seconds), never for being slow on a
loaded machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Pages that are notebooks (top-level ``await``): tests/docs/test_notebooks.py runs them in a
#: Jupyter kernel instead.
NOTEBOOK_PAGES = {"notebooks.md"}
PAGES = [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in NOTEBOOK_PAGES] + [
    ROOT / "README.md"
]
#: Pages whose examples get ``BATONFLOW_DATABASE_URL`` of a throw-away PostgreSQL server.
NEEDS_POSTGRES = {"deploy.md"}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def page_script(page: Path) -> str:
    """The runnable blocks of one page joined into one script."""
    blocks = [b for b in BLOCK.findall(page.read_text()) if not b.startswith("# doc: skip")]
    return "\n\n".join(blocks)


#: A page is stopped when its processes used no CPU for this long: it is stuck, not slow. A
#: wall-clock budget cannot tell the two apart: a page starts up to ~20 Python processes (three
#: of them import llama-index, seconds each), and on a loaded machine the same page takes 2 or
#: 10 times as long, so a budget either trips under load or waits forever for a real hang.
STUCK_AFTER = 90.0
#: The last resort, for a page that spins without end (hours; CI has its own limit).
CAP = 3600.0


def _ticks(pid: int) -> int | None:
    """CPU clock ticks of ``pid``: its own, its finished children's and its live children's."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After "pid (comm)": fields[11:15] are utime, stime, cutime, cstime.
    total = sum(int(f) for f in fields[11:15])
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == str(pid):
            continue
        try:
            child = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(child[1]) == pid:
            total += int(child[11]) + int(child[12])
    return total


def run_page(
    script: Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    stuck_after: float = STUCK_AFTER,
    cap: float = CAP,
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` to its end; stop it only once it has made no progress (CPU) for
    ``stuck_after`` seconds (or after ``cap``), and fail saying which."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, str(script)], cwd=cwd, env=env, stdout=out, stderr=err, text=True
        )
        started = last_progress = time.monotonic()
        seen = _ticks(proc.pid)
        watched = seen is not None  # no /proc (not Linux): only the cap applies
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.monotonic()
            ticks = _ticks(proc.pid) if watched else None
            if ticks is not None and ticks != seen:
                seen, last_progress = ticks, now
            stuck = watched and now - last_progress > stuck_after
            if stuck or now - started > cap:
                proc.kill()
                proc.wait()
                out.seek(0)
                err.seek(0)
                why = f"used no CPU for {stuck_after:g} s" if stuck else f"ran {cap:g} s"
                pytest.fail(f"{script.name} {why}: stuck\n{out.read()}\n{err.read()}")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())


# The page's own watchdog (run_page) tells a stuck page from a slow one; the suite's wall-clock
# timeout (120 s) would stop a slow page on a loaded machine, so it only backs up the cap here.
@pytest.mark.timeout(CAP + 60)
@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.exists() and page_script(p).strip()], ids=lambda p: p.name
)
def test_doc_page_examples_run(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The page's Python examples run to the end without error."""
    script = tmp_path / f"{page.stem}_examples.py"
    script.write_text(page_script(page))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI", "OTEL_", "BATONFLOW_DATABASE_URL"))
    }
    env["PYTHONPATH"] = str(ROOT)
    if page.name in NEEDS_POSTGRES:
        # Its examples run against a real (throw-away) PostgreSQL server.
        env["BATONFLOW_DATABASE_URL"] = request.getfixturevalue("postgres_url")
    proc = run_page(script, tmp_path, env)
    assert proc.returncode == 0, f"{page.name} examples failed:\n{proc.stdout}\n{proc.stderr}"


def test_a_page_that_waits_on_nothing_is_stopped_as_stuck(tmp_path: Path) -> None:
    """The watchdog stops a page whose processes use no CPU (a hang), and says so."""
    script = tmp_path / "hang.py"
    script.write_text("import time\nprint('before the hang', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(pytest.fail.Exception, match=r"used no CPU for 2 s: stuck\nbefore the hang"):
        run_page(script, tmp_path, stuck_after=2)


def test_a_slow_page_that_computes_is_not_stopped(tmp_path: Path) -> None:
    """A page that keeps computing (here a child process, as the CLI pages start) for longer
    than ``stuck_after`` (2 s) runs to its end."""
    script = tmp_path / "busy.py"
    script.write_text(
        "import subprocess, sys\n"
        "code = 'import time\\nend = time.process_time() + 3\\nwhile time.process_time() < end: pass'\n"
        "subprocess.run([sys.executable, '-c', code], check=True)\n"
        "print('done')\n"
    )
    assert run_page(script, tmp_path, stuck_after=2).stdout == "done\n"
