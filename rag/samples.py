"""The small Markdown documents about batonflow bundled with ``batonflow.rag`` (for demos)."""

from __future__ import annotations

from pathlib import Path


def sample_docs_dir() -> Path:
    """The folder of the bundled sample documents (Markdown files about batonflow itself)."""
    return Path(__file__).resolve().parent / "sample_docs"


__all__ = ["sample_docs_dir"]
