"""``batonflow --help`` is quick and right: it loads no engine, and each command's help is true.

typer 0.29 printed boolean flags as ``--json <bool>`` although ``--json true`` is an error, and
parsed options with pydantic; pyproject pins typer to the tested range. The help of every
command is read here: a flag shows no value, and ``--help`` runs in a fresh process without
importing the engine, pydantic or asyncio (they cost ``--help`` 17x ``python -c pass``).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer
from batonflow.apps.cli import app
from typer.testing import CliRunner

#: Every command of the command line, as typed after ``batonflow``.
COMMANDS = [
    (),
    ("run",),
    ("draw",),
    ("serve",),
    ("demo",),
    ("rag",),
    ("rag", "ingest"),
    ("rag", "ask"),
    ("runs",),
    ("runs", "list"),
    ("runs", "show"),
    ("runs", "resume"),
    ("runs", "cancel"),
    ("runs", "delete"),
    ("runs", "prune"),
    ("runs", "fork"),
    ("runs", "journal"),
    ("runs", "check"),
    ("schedule",),
    ("schedule", "add"),
    ("schedule", "list"),
    ("schedule", "remove"),
]

#: Modules that ``batonflow --help`` must not import: the engine and what only it needs.
ENGINE = ("batonflow.core", "pydantic", "asyncio", "batonflow.apps.run_store")
#: What help renders without: rich's Markdown (markdown-it) and tracebacks (pygments, attrs), the
#: HTTP client, and the standard modules only a command's work needs (a file flow's digest, a
#: replica's host name). Each cost `--help` time in bench/startup.py.
NOT_FOR_HELP = (
    "rich.markdown",
    "rich.traceback",
    "rich.pretty",
    "markdown_it",
    "pygments",
    "attr",
    "httpx",
    "batonflow.client",
    "hashlib",
    "socket",
)


def _flags(path: tuple[str, ...]) -> list[str]:
    """The boolean flags of the command at ``path`` (``--json``, ``--stream``...)."""
    click_command = typer.main.get_command(app)
    ctx = click_command.make_context("batonflow", [*path, "--help"], resilient_parsing=True)
    for name in path:
        click_command = click_command.get_command(ctx, name)  # type: ignore[attr-defined]
    return [
        opt
        for param in click_command.params
        if getattr(param, "is_flag", False) and not getattr(param, "hidden", False)
        for opt in param.opts
        if opt != "--help"
    ]


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "batonflow")
def test_each_command_has_help_and_flags_take_no_value(path: tuple[str, ...]) -> None:
    """`--help` of each command exits 0, and each of its flags is shown without a value."""
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert "<bool>" not in result.output and "BOOLEAN" not in result.output
    for flag in _flags(path):
        line = next(ln for ln in result.output.splitlines() if re.search(rf"{flag}\b", ln))
        after = line.split(flag, 1)[1].lstrip(" │")
        assert not after.startswith(("<", "TEXT", "BOOL")), f"{flag} shows a value: {line!r}"


def test_a_flag_given_a_value_is_refused_and_the_flag_alone_works(tmp_path) -> None:
    """`--json` is a flag: `--json true` is refused, `--json` alone prints JSON."""
    runner = CliRunner()
    refused = runner.invoke(app, ["run", "accumulate", "--set", "numbers=[1]", "--json", "true"])
    assert refused.exit_code == 2
    assert "true" in refused.output
    works = runner.invoke(app, ["run", "accumulate", "--set", "numbers=[1,2]", "--json"])
    assert works.exit_code == 0, works.output
    assert '"result"' in works.stdout


@pytest.mark.parametrize("path", [(), ("runs",), ("rag",), ("run",)], ids=" ".join)
def test_help_in_a_fresh_process_imports_no_engine(path: tuple[str, ...]) -> None:
    """`batonflow [COMMAND] --help` imports neither batonflow.core, pydantic nor asyncio."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "batonflow", *path, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    loaded = sorted(
        m
        for m in imported
        if m.split(".")[0] in {"pydantic", "asyncio"}
        or any(m == name or m.startswith(name + ".") for name in ENGINE + NOT_FOR_HELP)
    )
    assert loaded == [], f"batonflow {' '.join(path)} --help imported {loaded}"


#: Runs the command line as the console script does, with rich's Markdown and traceback modules
#: imported first when the first argument is "preload" (then typer's help renderer uses them).
_HELP_RUNNER = """
import sys
if sys.argv[1] == "preload":
    import rich.markdown, rich.traceback
sys.argv = ["batonflow", *sys.argv[2:]]
from batonflow.__main__ import main
main()
"""


@pytest.mark.parametrize("path", [(), ("runs",), ("run",)], ids=" ".join)
def test_help_text_is_what_typer_renders_with_rich_markdown_loaded(path: tuple[str, ...]) -> None:
    """Help rendered without rich.markdown and rich.traceback loaded is the same text."""
    env = {"COLUMNS": "100", "TERM": "dumb", "PATH": "/usr/bin:/bin"}
    texts = []
    for mode in ("preload", "light"):
        proc = subprocess.run(
            [sys.executable, "-c", _HELP_RUNNER, mode, *path, "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        texts.append(proc.stdout)
    assert "Usage: batonflow" in texts[0]
    assert texts[1] == texts[0]


def test_the_stand_ins_build_rich_objects_when_used() -> None:
    """typer's Markdown help and pretty tracebacks still get rich's own objects."""
    from batonflow.apps._typer_help import _Markdown, _Traceback
    from rich.markdown import Markdown
    from rich.traceback import Traceback

    assert isinstance(_Markdown("**bold**"), Markdown)
    try:
        raise ValueError("boom")
    except ValueError as exc:
        built = _Traceback.from_exception(type(exc), exc, exc.__traceback__)
    assert isinstance(built, Traceback)


def test_a_typer_that_needs_other_names_gets_rich_modules() -> None:
    """If typer imports a name the stand-ins lack, typer.rich_utils loads rich's own modules."""
    code = """
import sys
from batonflow.apps import _typer_help
_typer_help._STAND_INS = {"rich.markdown": ("NotInRich", _typer_help._Markdown)}
_typer_help.load_help_renderer()
import typer.rich_utils
from rich.markdown import Markdown
assert typer.rich_utils.Markdown is Markdown, typer.rich_utils.Markdown
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
