"""The ``batonflow`` command line.

::

    batonflow run guess-number --set target=42 --stream
    batonflow run mypkg.flows:MyFlow --set topic=pirates --json
    batonflow rag ingest docs/ && batonflow rag ask "How do I resume a run?"
    batonflow draw joke -o joke.html
    batonflow serve --port 8000 --token s3cret
    batonflow runs list
    batonflow demo

Settings come from flags, then the environment (``BATONFLOW_*``, ``OPENAI_API_KEY``,
``OTEL_*``), then defaults (see :mod:`batonflow.apps.config`). Exit code 0 on success;
otherwise one ``error: …`` line on stderr (the traceback only with ``--debug``).
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The extra's packages are checked before they are imported, for a clear error.
# ruff: noqa: E402
from batonflow._extras import require_extra

require_extra("the batonflow command line", "cli", {"typer": "typer", "rich": "rich"})

import typer

from ._typer_help import load_help_renderer

load_help_renderer()

from . import _budget_cli, _check_cli, _fork_cli, _journal_cli  # noqa: F401  (runs budget, check, fork, journal, export)
from ._budget_cli import cli_budget
from ._console import cli_errors, err, one_line, print_json, print_result, setup_tracing
from ._runs_cli import runs_app
from ._schedule_cli import schedule_app
from ._stream_printer import StreamPrinter
from .config import Settings
from .rag_cli import rag_app
from .registry import (
    PREBUILT,
    BadParameterError,
    load_workflow,
    parse_sets,
    text_where_expected,
)
from .serve_cli import serve

app = typer.Typer(
    name="batonflow",
    help="Run, draw and serve batonflow workflows; ingest and ask with RAG; try the demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.add_typer(rag_app, name="rag")
app.add_typer(runs_app, name="runs")
app.add_typer(schedule_app, name="schedule")

_FLOWS_HELP = (
    "A prebuilt flow (" + ", ".join(PREBUILT) + "), module:WorkflowClass, "
    "module:instance or path/to/file.py:WorkflowClass."
)


def _version(value: bool) -> None:
    if value:
        from batonflow import __version__

        typer.echo(f"batonflow {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """batonflow: event-driven workflows, agents and RAG; durable and traced."""


@app.command()
def run(
    flow: str = typer.Argument(..., help=_FLOWS_HELP),
    sets: list[str] = typer.Option(
        [],
        "--set",
        "-s",
        metavar="KEY=VALUE",
        help="A start-event field; the value is JSON when it parses (3, true, [1,2]), else text.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (NDJSON with --stream)."),
    stream: bool = typer.Option(False, "--stream", help="Print the events the run streams."),
    answers: list[str] = typer.Option(
        [],
        "--answer",
        "-a",
        metavar="TEXT",
        help="Answer to give when the run asks for input (repeatable; then stdin is asked).",
    ),
    durable: bool = typer.Option(
        False,
        "--durable",
        help="Checkpoint every step into the run store, so 'batonflow runs resume ID' can "
        "continue the run if this process dies.",
    ),
    db: str | None = typer.Option(
        None,
        "--db",
        help="Run store for --durable: a SQLite file or postgresql:// URL "
        "\\[env BATONFLOW_DATABASE_URL or BATONFLOW_DB; .batonflow/runs.db].",
    ),
    server: str | None = typer.Option(
        None,
        "--server",
        metavar="URL",
        help="Run it on this batonflow server (FLOW = a name it serves) \\[env BATONFLOW_SERVER].",
    ),
    token: str | None = typer.Option(
        None, "--token", help="The server's token \\[env BATONFLOW_API_TOKEN]."
    ),
    idempotency_key: str | None = typer.Option(
        None,
        "--idempotency-key",
        metavar="KEY",
        help="Start at most one run with this key (--durable or --server): run again with "
        "it, the run it started is followed instead of a new one.",
    ),
    budget: str | None = typer.Option(
        None,
        "--budget",
        metavar="AMOUNT",
        help="The run's LLM budget (--durable or --server): tokens ('5000') or US dollars "
        "('$0.50'); a call that would pass it waits for 'batonflow runs budget RUN --raise N'.",
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    """Run a flow and print its result.

    Examples: [bold]batonflow run guess-number --set target=42 --stream[/],
    [bold]batonflow run accumulate --set numbers='[1, 2, 3]' --json[/],
    [bold]batonflow run hitl --server http://127.0.0.1:8000 --answer yes[/].
    """
    with cli_errors(debug):
        fields = parse_sets(sets)
        from ._remote import server_url

        url = server_url(server)
        if url is not None:
            _run_on_server(
                url,
                token,
                flow,
                fields,
                stream,
                as_json,
                list(answers),
                durable,
                sets=sets,
                idempotency_key=idempotency_key,
                budget=budget,
            )
            return
        if idempotency_key is not None and not durable:
            raise BadParameterError(
                "--idempotency-key needs a run store that keeps the key: add --durable (or "
                "--server URL)."
            )
        if budget is not None and not durable:
            raise BadParameterError(
                "--budget needs a run store that keeps the run's usage: add --durable (or "
                "--server URL)."
            )
        limit = None if budget is None else cli_budget(budget)
        settings = Settings.load(db=db)
        # Cheap checks first: the flow's store, the run store (a flow may load for seconds).
        prebuilt = PREBUILT.get(flow)
        if prebuilt is not None and prebuilt.check is not None:
            prebuilt.check(settings)
        checkpoints = settings.open_store() if durable else None
        flow_ref = _flow_reference(flow) if durable else None
        setup_tracing()
        workflow = load_workflow(flow, settings)
        from ._introspect import start_schema

        fields = text_where_expected(fields, sets, start_schema(workflow))
        stdout = sys.stdout
        # With --json, stdout carries only JSON: whatever the steps print goes to stderr.
        redirect = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
        from ._signals import Interrupted, run_interruptibly

        started: list[str] = []

        def on_run(run_id: str) -> None:
            started.append(run_id)

        printer = StreamPrinter(err, echo=stream and not as_json)

        try:
            with redirect, _durability_explained(durable):
                result, run_id = run_interruptibly(
                    run_flow(
                        workflow,
                        fields,
                        stream=stream,
                        as_json=as_json,
                        answers=list(answers),
                        stdout=stdout,
                        printer=printer,
                        checkpoints=checkpoints,
                        on_start=on_run,
                        flow_ref=flow_ref,
                        idempotency_key=idempotency_key,
                        budget=limit,
                    )
                )
        except Interrupted as exc:
            _interrupted(exc.signal_name, checkpoints, started[0] if started else None)
        if checkpoints is not None:
            checkpoints.close()
        _print_outcome(result, run_id, flow, as_json, printer, stdout)


def _print_outcome(
    result: Any, run_id: str, flow: str, as_json: bool, printer: StreamPrinter, stdout: Any
) -> None:
    """The run's result on stdout: JSON with --json; an agent's answer text; else the result.

    An agent's answer that was streamed to the same terminal is not printed a second time.
    """
    if as_json:
        print_json({"run_id": run_id, "flow": flow, "result": result}, stdout)
    elif printer.answer is None:
        print_result(result)
    elif not (printer.answer_streamed and _same_terminal(stdout)):
        print_result(printer.answer)


def _same_terminal(stdout: Any) -> bool:
    """Whether stdout and stderr are both this terminal (streamed text is then already shown)."""
    try:
        return bool(stdout.isatty() and sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


def _interrupted(signal_name: str, checkpoints: Any, run_id: str | None) -> None:
    """Record a durable run stopped by a signal as interrupted; say how to continue; exit 130."""
    from ._signals import EXIT_INTERRUPTED

    if checkpoints is not None and run_id is not None:
        checkpoints.finish_run(
            run_id,
            "interrupted",
            error=f"Interrupted by {signal_name}; continue it with: batonflow runs resume {run_id}",
        )
        checkpoints.close()
        err.print(
            f"interrupted by {signal_name}: run {run_id} stopped after its last completed step; "
            f"continue it with: batonflow runs resume {run_id}",
            markup=False,
        )
    else:
        err.print(f"interrupted by {signal_name}", markup=False)
    raise typer.Exit(EXIT_INTERRUPTED)


def _run_on_server(
    url: str,
    token: str | None,
    flow: str,
    fields: dict[str, Any],
    stream: bool,
    as_json: bool,
    answers: list[str],
    durable: bool,
    sets: list[str],
    idempotency_key: str | None = None,
    budget: str | None = None,
) -> None:
    from ._remote import run_remote

    if durable:
        raise BadParameterError(
            "--durable is for runs in this process; a server checkpoints its runs itself "
            "(batonflow serve --durable, the default): drop --durable or --server."
        )
    stdout = sys.stdout
    printer = StreamPrinter(err, echo=stream and not as_json)
    result, run_id = run_remote(
        url,
        token,
        flow,
        fields,
        stream=stream,
        as_json=as_json,
        answers=answers,
        ask=_ask,
        stdout=stdout,
        printer=printer,
        sets=sets,
        idempotency_key=idempotency_key,
        budget=budget,
    )
    _print_outcome(result, run_id, flow, as_json, printer, stdout)


@contextlib.contextmanager
def _durability_explained(durable: bool) -> Iterator[None]:
    """With --durable, say that a serialization failure comes from the checkpoints."""
    try:
        yield
    except Exception as exc:
        from ._pump import serialization_failure

        if not durable or not serialization_failure(exc):
            raise
        raise BadParameterError(
            f"{one_line(exc)} (--durable checkpoints every step, which needs serializable "
            "state and stream events: run without --durable, or give the workflow "
            "serializer=PickleSerializer() for trusted data.)"
        ) from exc


def _flow_reference(flow: str) -> str:
    """``flow`` as the run's record keeps it, so ``runs resume ID`` needs no --flow."""
    module, sep, attr = flow.rpartition(":")
    if sep and (module.endswith(".py") or "/" in module or "\\" in module):
        flow = f"{Path(module).resolve()}:{attr}"  # resumable from any folder
    return flow


async def run_flow(
    workflow: Any,
    fields: dict[str, Any],
    *,
    stream: bool = False,
    as_json: bool = False,
    answers: list[str] | None = None,
    stdout: Any = None,
    printer: StreamPrinter | None = None,
    checkpoints: Any = None,
    on_start: Any = None,
    flow_ref: str | None = None,
    idempotency_key: str | None = None,
    budget: Any = None,
) -> tuple[Any, str]:
    """Run ``workflow`` with start fields, answering input requests; return (result, run id).

    With ``checkpoints`` (a checkpoint store) the run is recorded before it starts and records
    a checkpoint after every step. ``on_start`` is the flow reference kept in the run's record
    (for ``runs resume``), or a callable called with the run id once it has one. ``printer``
    shows the stream to people (with ``stream`` and without ``as_json``) and keeps an agent's
    answer. With ``idempotency_key`` (and ``checkpoints``) a key that started a run already
    is refused with the command that shows that run.

    Raises:
        BadParameterError: A start field the workflow's typed start event rejects.
    """
    import asyncio  # not at the top: it costs `batonflow --help` 28 ms (bench/startup.py)

    from batonflow.core import StopEvent

    from ._child_answers import asking
    from ._introspect import StartFieldsError, build_start_event
    from ._wire import event_envelope

    pending = list(answers or [])
    printer = printer or StreamPrinter(err, echo=stream and not as_json)
    try:
        start = build_start_event(workflow, fields)
    except StartFieldsError as exc:
        kind = exc.errors[0]["type"] if exc.errors else ""
        fix = {
            "extra_forbidden": "fix the name and run again",
            "missing": f"add --set {exc.field}=VALUE",
        }.get(kind, "fix the value and run again")
        raise BadParameterError(f"--set {exc.field}: {exc.reason}; {fix}.") from None
    if checkpoints is not None:
        from batonflow.core.checkpoints import RunInfo, WorkflowCheckpointer

        flow_ref = on_start if isinstance(on_start, str) else flow_ref
        info = RunInfo(owner="cli", flow_ref=flow_ref)
        checkpointer = WorkflowCheckpointer(workflow, store=checkpoints)
        from batonflow.core.errors import DuplicateStartError

        try:
            handler = checkpointer.start(
                start_event=start, info=info, idempotency_key=idempotency_key, budget=budget
            )
        except DuplicateStartError as exc:
            raise BadParameterError(
                f"--idempotency-key {idempotency_key} started run {exc.run_id} already "
                f"({exc.record.status}); nothing new was started. See it with: batonflow runs "
                f"show {exc.run_id}"
            ) from None
        if callable(on_start):
            on_start(str(handler.run_id))
        err.print(
            f"run {handler.run_id} (if it stops: batonflow runs resume {handler.run_id})",
            markup=False,
        )
    else:
        checkpointer = None
        handler = workflow.run(start_event=start)
    try:
        async for event in handler.stream_events():
            if isinstance(event, StopEvent):
                continue
            if stream and as_json:
                print_json({"event": event_envelope(event)}, stdout)
            elif printer.wants(type(event).__name__):
                envelope = event_envelope(event)
                printer.show(envelope["type"], envelope["qualified_name"], envelope["value"])
            asker = asking(workflow, handler, event)  # the run, or a child run of it
            if asker is not None:
                printer.close()
                answer = pending.pop(0) if pending else _ask(asker.prompt)
                handler.ctx.send_event(local_answer(asker.workflow, asker.handler, answer))
        printer.close()
        result = await handler
    except asyncio.CancelledError:  # Ctrl-C or SIGTERM (see _signals): stop the run, then go
        from ._signals import stop_handler

        if checkpointer is not None:
            # Stopped from outside, not cancelled: the caller records it interrupted (an
            # ended run's record would not change any more).
            checkpointer.release(str(handler.run_id))
        await stop_handler(handler)
        raise
    return result, str(handler.run_id)


def local_answer(workflow: Any, handler: Any, text: str) -> Any:
    """The event answering, with ``text``, what a run in this process waits for now.

    Raises:
        BadParameterError: The answer does not fit what the run waits for.
    """
    from ._answers import answer_from_text, asked_in, expected

    try:
        return answer_from_text(expected(workflow, asked_in(handler.ctx), handler), text)
    except ValueError as exc:
        raise BadParameterError(str(exc)) from None


def _ask(prompt: str) -> str:
    err.print(prompt, end="", markup=False)
    line = sys.stdin.readline()
    if not line:
        err.print()
        raise BadParameterError(
            "The run asks for input but stdin is closed; pass the answer with --answer TEXT."
        )
    return line.rstrip("\n")


@app.command()
def draw(
    flow: str = typer.Argument(..., help=_FLOWS_HELP),
    output: Path = typer.Option(
        ..., "--output", "-o", help="Where to write: .html (self-contained page) or .mmd/.md."
    ),
    max_label_length: int | None = typer.Option(
        None, "--max-label-length", min=1, help="Cut longer node labels."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    """Draw all possible flows of a workflow to an HTML page or a Mermaid file."""
    with cli_errors(debug):
        from .registry import load_workflow_class

        # The output first: loading the flow may import llama-index (seconds).
        suffix = output.suffix.lower()
        if suffix not in (".html", ".htm", ".mmd", ".md"):
            raise BadParameterError(
                f"Cannot draw to {str(output)!r}: use a .html, .mmd or .md file name."
            )
        if not output.parent.exists():
            raise BadParameterError(
                f"Folder {str(output.parent)!r} does not exist; create it or choose another -o."
            )
        target = load_workflow_class(flow)
        from ._introspect import drawing

        # The engine prints the file name (as LlamaIndex's drawing does); the CLI says it on
        # stderr instead, keeping stdout for data.
        with contextlib.redirect_stdout(io.StringIO()):
            drawing().draw_all_possible_flows(
                target, filename=str(output), max_label_length=max_label_length
            )
        err.print(f"wrote {output}")


# serve_cli.py: the HTTP server (registered here, so --help lists it after draw).
app.command()(serve)


@app.command()
def demo(
    serve: bool = typer.Option(
        False, "--serve", help="Keep the server and its run console open at the end (Ctrl-C)."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    """The offline tour: an agent calling tools, RAG, a drawing, a trace, the run console."""
    with cli_errors(debug):
        from batonflow._extras import require_extra

        require_extra(
            "batonflow demo",
            "demo",
            {
                "llama_index.core": "llama-index-core",
                "qdrant_client": "qdrant-client",
                "fastapi": "fastapi",
                "uvicorn": "uvicorn",
                "httpx_sse": "httpx-sse",
                "opentelemetry.sdk": "opentelemetry-sdk",
            },
        )
        from .demo import run_demo

        run_demo(Settings.load(), serve=serve)


def main() -> None:
    """Entry point of the ``batonflow`` console script."""
    app()


__all__ = ["app", "main", "run_flow"]
