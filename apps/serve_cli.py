"""``batonflow serve``: the HTTP server, its run store and the workflows it serves.

Registered as a command of :data:`batonflow.apps.cli.app`. What the user gave (options, the
run store, ``OTEL_*`` settings, ``--workflow`` flows) is checked before the prebuilt flows
load llama-index, so a mistake is reported in about a second.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

import typer

from ._console import cli_errors, err, one_line, setup_tracing
from .config import ConfigError, Settings
from .registry import PREBUILT, BadParameterError, load_workflow


def serve(
    host: str | None = typer.Option(
        None, help="Interface to bind \\[env BATONFLOW_HOST; 127.0.0.1]."
    ),
    port: int | None = typer.Option(
        None, help="TCP port, 0 = any free \\[env BATONFLOW_PORT; 8000]."
    ),
    token: str | None = typer.Option(
        None, help="Require 'Authorization: Bearer TOKEN' \\[env BATONFLOW_API_TOKEN]."
    ),
    db: str | None = typer.Option(
        None,
        help="Run store: a SQLite file, or a postgresql:// URL that several servers share "
        "\\[env BATONFLOW_DATABASE_URL or BATONFLOW_DB; .batonflow/runs.db].",
    ),
    replica_id: str | None = typer.Option(
        None,
        help="This server's name among replicas on one PostgreSQL database "
        "\\[env BATONFLOW_REPLICA_ID; host-pid].",
    ),
    lease_seconds: float | None = typer.Option(
        None,
        help="How long a replica holds a run without a heartbeat; after that another "
        "replica takes it over \\[env BATONFLOW_LEASE_SECONDS; 15].",
    ),
    outage_seconds: float | None = typer.Option(
        None,
        help="How long a PostgreSQL store rides out a database it cannot reach (a restart): "
        "requests get 503 with Retry-After and runs wait; after that runs are interrupted "
        "\\[env BATONFLOW_OUTAGE_SECONDS; 60].",
    ),
    workflows: list[str] = typer.Option(
        [],
        "--workflow",
        "-w",
        metavar="NAME=MODULE:CLASS",
        help="Serve another workflow under NAME (repeatable).",
    ),
    prebuilt: bool = typer.Option(True, help="Also serve the prebuilt flows that can run here."),
    durable: bool = typer.Option(
        True, help="Checkpoint every step, so runs in progress resume after a restart."
    ),
    allowed_hosts: list[str] = typer.Option(
        [],
        "--allowed-host",
        metavar="NAME",
        help="Without a token, also serve requests addressed to NAME (repeatable; '*' = any) "
        "\\[env BATONFLOW_ALLOWED_HOSTS, comma-separated].",
    ),
    keep_finished: str | None = typer.Option(
        None,
        "--keep-finished",
        metavar="DURATION",
        help="Delete runs that ended longer ago than DURATION (7d, 12h), in the background "
        "\\[env BATONFLOW_KEEP_FINISHED; keep all].",
    ),
    keep_finished_for: list[str] = typer.Option(
        [],
        "--keep-finished-for",
        metavar="NAME=DURATION",
        help="A different period for one workflow's runs (repeatable) "
        "\\[env BATONFLOW_KEEP_FINISHED_FOR, comma-separated].",
    ),
    budgets: list[str] = typer.Option(
        [],
        "--budget",
        metavar="[NAME=]AMOUNT",
        help="The LLM budget of every run (AMOUNT: '5000' tokens, '$0.50'), or of workflow "
        "NAME's runs (repeatable); a start's ?budget= gives one run another.",
    ),
    max_running: int | None = typer.Option(
        None,
        "--max-running",
        metavar="N",
        help="Queue runs and run at most N at once in this server (replica).",
    ),
    max_queued: int | None = typer.Option(
        None,
        "--max-queued",
        metavar="N",
        help="Queue runs; a workflow with N queued runs answers 429 with Retry-After.",
    ),
    limits: list[str] = typer.Option(
        [],
        "--limit",
        metavar="NAME:SETTING=VALUE",
        help="Queue NAME's runs under a limit (repeatable; NAME * = all): concurrency=N, "
        "key_field=FIELD, key_header=HEADER, key_concurrency=N, rate=N/SECONDS, max_queued=N.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No access log line per request."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    """Serve workflows over HTTP: runs, SSE event streams, human-in-the-loop, cancel.

    Needs the server extra: pip install 'batonflow\\[server]'. Stop it with Ctrl-C or SIGTERM:
    runs in progress are checkpointed and resume at the next start.
    """
    with cli_errors(debug):
        from batonflow._extras import require_extra

        require_extra("batonflow serve", "server", {"fastapi": "fastapi", "uvicorn": "uvicorn"})
        settings = Settings.load(
            host=host,
            port=port,
            api_token=token,
            db=db,
            replica_id=replica_id,
            lease_seconds=lease_seconds,
            outage_seconds=outage_seconds,
            keep_finished=keep_finished,
            keep_finished_for=tuple(keep_finished_for) or None,
        )
        retention = settings.retention()  # a bad period fails before anything starts
        from ._uvicorn import bind_socket

        sock = bind_socket(settings.host, settings.port)  # a port in use fails before set-up
        env_hosts = os.environ.get("BATONFLOW_ALLOWED_HOSTS", "")
        hosts = [*allowed_hosts, *(h.strip() for h in env_hosts.split(",") if h.strip())]
        extra = _workflow_options(workflows)
        from .run_store import RunStore

        # What the user gave is checked before the prebuilt flows load (llama-index: seconds).
        if settings.database_url is not None:
            # One store for records and checkpoints; on PostgreSQL it joins the replicas.
            checkpoints = settings.open_store(replica=True)
            store = RunStore(backend=checkpoints)
        else:
            store = RunStore(settings.db_path)
            checkpoints = settings.open_store() if durable else None
        traces = setup_tracing("batonflow-server")  # a bad OTEL_* setting says so first
        served = _served_workflows(settings, extra, prebuilt)
        from ._budget_view import budget_options

        try:
            budget_limits = budget_options(list(budgets), served)
        except ValueError as exc:
            raise BadParameterError(str(exc)) from None
        from ._queue import LimitError, parse_limits

        try:
            queue_limits = parse_limits(
                served, max_running=max_running, max_queued=max_queued, items=limits
            )
        except LimitError as exc:
            raise ConfigError(str(exc)) from None
        from .server import create_app
        from .server import serve as run_server

        app_ = create_app(
            served,
            store=store,
            token=settings.api_token,
            max_body_bytes=settings.max_body_bytes,
            checkpoints=checkpoints,
            allowed_hosts=hosts,
            retention=retention,
            budgets=budget_limits,
            limits=queue_limits,
        )
        if settings.host not in ("127.0.0.1", "localhost", "::1") and not settings.api_token:
            err.print(
                f"[yellow]warning:[/] serving on {settings.host} without a token; "
                "anyone who can reach it can run workflows (pass --token)."
            )

        def ready(url: str) -> None:
            err.print(
                f"batonflow server on {url} serving {', '.join(sorted(served))}; "
                f"runs in {_where(settings, checkpoints)}; traces {traces}",
                markup=False,
            )
            sys.stderr.flush()

        _log_to_stderr()
        # uvicorn stops gracefully on SIGTERM, then re-raises it: make that a clean exit too.
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a server is stopped
            run_server(
                app_,
                settings.host,
                settings.port,
                log_level="warning",
                on_ready=ready,
                access_log=not quiet,
                sock=sock,
            )
        err.print("batonflow server stopped")


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # stopped like Ctrl-C: runs in progress stay checkpointed


def _log_to_stderr() -> None:
    """Show the server's own log lines (runs resumed, errors) on stderr, as uvicorn does."""
    import logging

    logger = logging.getLogger("batonflow.apps")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:  %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def _where(settings: Settings, store: Any) -> str:
    """Where the server keeps its runs, for its start-up line (no password)."""
    replica = getattr(store, "replica_id", None)
    if replica is not None:
        return f"{store!r} as replica {replica!r}"
    return str(settings.db_path) if settings.database_url is None else repr(store)


def _workflow_options(items: list[str]) -> dict[str, str]:
    """The ``--workflow NAME=MODULE:CLASS`` options, by name.

    Raises:
        BadParameterError: An option that is not ``NAME=MODULE:CLASS``.
    """
    specs: dict[str, str] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name or not spec:
            raise BadParameterError(
                f"--workflow expects NAME=MODULE:CLASS, got {item!r}; e.g. "
                "--workflow approval=batonflow.apps.examples.approval:ApprovalFlow."
            )
        specs[name] = spec
    return specs


def _served_workflows(settings: Settings, specs: dict[str, str], prebuilt: bool) -> dict[str, Any]:
    """The workflows to serve: ``specs`` and the prebuilt flows they do not replace.

    ``specs`` (name → ``module:Class``, from ``--workflow``) load first, so an error in the
    user's own is reported before the prebuilt flows load llama-index (seconds).
    """
    from .registry import FlowSetupError, LLMNotConfiguredError

    extra = {name: load_workflow(spec, settings) for name, spec in specs.items()}
    served: dict[str, Any] = {}
    need_llm: list[str] = []
    if prebuilt:
        for name in PREBUILT:
            if name in specs:
                continue  # --workflow serves another flow under this name
            try:
                served[name] = load_workflow(name, settings)
                if hasattr(served[name], "print_progress"):
                    # Concurrent runs' print()s would interleave in the server log; the
                    # progress is in each run's event stream.
                    served[name].print_progress = False
            except LLMNotConfiguredError:
                need_llm.append(name)
            except Exception as exc:  # one flow that cannot be built must not stop the others
                reason = str(exc) if isinstance(exc, FlowSetupError) else one_line(exc)
                err.print(f"not serving {name!r}: {reason}", markup=False)
    if need_llm:
        err.print(f"not serving {', '.join(need_llm)} (set OPENAI_API_KEY)", markup=False)
    served.update(extra)
    if not served:
        raise BadParameterError("No workflow to serve; add one with --workflow NAME=MODULE:CLASS.")
    return served
