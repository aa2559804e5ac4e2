"""Every ``python`` code block in ``docs/*.md`` and ``README.md`` runs, so the docs cannot rot.

The blocks of one page run in order, in one fresh Python process, as one script (later blocks
see what earlier ones defined). A block whose first line is ``# doc: skip`` is shown to readers
but not run (shell-like fragments, things that need a network). Pages run in a temporary folder
with no OpenAI key, so examples must work offline.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def page_script(page: Path) -> str:
    """The runnable blocks of one page joined into one script."""
    blocks = [b for b in BLOCK.findall(page.read_text()) if not b.startswith("# doc: skip")]
    return "\n\n".join(blocks)


# A page runs many subprocesses (cli.md: about 20 commands); the subprocess has 240 s, so
# the test gets a little more than that, not the suite's 120 s default.
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.exists() and page_script(p).strip()], ids=lambda p: p.name
)
def test_doc_page_examples_run(page: Path, tmp_path: Path) -> None:
    """The page's Python examples run to the end without error."""
    script = tmp_path / f"{page.stem}_examples.py"
    script.write_text(page_script(page))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, f"{page.name} examples failed:\n{proc.stdout}\n{proc.stderr}"
