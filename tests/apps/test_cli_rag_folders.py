"""``batonflow rag ingest`` on a real-looking folder: counts per reason, --verbose, --ext."""

from __future__ import annotations

import gzip
from pathlib import Path

from batonflow.apps.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def _folder(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "guide.md").write_text("# Guide\n\nPreheat the oven to 200 degrees.\n")
    (root / "pkg" / "copyright").write_text("Copyright 2026 The Authors.\n")
    (root / "pkg" / "changelog.gz").write_bytes(gzip.compress(b"pkg (1.0): the oven bakes\n"))
    for n in range(4):
        (root / "pkg" / f"page{n}.html").write_text(f"<p>Page {n} about ovens</p>\n")
    (root / "pkg" / "logo.png").write_bytes(b"\x89PNG\r\n\x00")
    (root / "pkg" / "blob").write_bytes(b"\x00\x01")
    return root


def test_ingest_counts_what_it_left_by_reason_and_lists_it_with_verbose(tmp_path: Path) -> None:
    docs = _folder(tmp_path / "doc")
    where = ["--qdrant-path", str(tmp_path / "q"), "--collection", "oven"]
    plain = runner.invoke(app, ["rag", "ingest", str(docs), *where])
    assert plain.exit_code == 0, plain.output
    assert "ingested 3 file(s)" in plain.stdout
    assert "not ingested: 6 file(s)" in plain.stdout
    assert "     5  file type not read (add it with --ext / required_exts)" in plain.stdout
    assert "     1  binary, not text" in plain.stdout
    assert "skipped" not in plain.stdout and "--verbose lists each file" in plain.stdout
    verbose = runner.invoke(app, ["rag", "ingest", str(docs), *where, "--verbose"])
    assert verbose.exit_code == 0, verbose.output
    for name in ("page0.html", "page3.html", "logo.png", "blob"):
        assert f"skipped {docs / 'pkg' / name}:" in verbose.stdout
    html = runner.invoke(app, ["rag", "ingest", str(docs), *where, "--ext", "html", "--ext", ".md"])
    assert html.exit_code == 0, html.output
    assert "ingested 5 file(s)" in html.stdout
    assert "not in the extensions asked for" in html.stdout
    asked = runner.invoke(app, ["rag", "ask", "What do page 2 say about ovens?", *where])
    assert asked.exit_code == 0 and "page2.html" in asked.stdout
