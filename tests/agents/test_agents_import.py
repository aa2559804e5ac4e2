"""`import batonflow.agents` without llama-index fails with the pip command to run."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_missing_llama_index_names_the_extra() -> None:
    """With llama_index unimportable, the ImportError says pip install 'batonflow[agents]'."""
    script = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "llama_index" or name.startswith("llama_index."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None

        sys.meta_path.insert(0, Block())
        try:
            import batonflow.agents
        except ImportError as exc:
            print(type(exc).__name__, exc)
        else:
            print("imported")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingDependencyError batonflow.agents needs llama-index-core")
    assert "pip install 'batonflow[agents]'" in proc.stdout


def test_import_does_not_load_the_engine_flows_or_openai() -> None:
    """Importing the package loads no flow module and not the OpenAI client."""
    script = (
        "import sys, batonflow.agents\n"
        "print(sorted(m for m in sys.modules if m.startswith(('batonflow.agents.react', 'openai', 'llama_index.llms.openai'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
