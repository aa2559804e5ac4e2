"""Shared pieces of the command line: consoles, one-line errors, tracing set-up, printing."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterator
from typing import IO, Any

import typer
from rich.console import Console

from ._wire import jsonable

#: Results and streamed events go to stdout; messages, progress and errors to stderr.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

#: Exceptions (and their subclasses) whose message is already a complete, user-facing sentence.
_SELF_EXPLAINING = (
    "FlowNotFoundError",
    "FlowSetupError",
    "BadParameterError",
    "ConfigError",
    "TracingConfigurationError",
    "MissingDependencyError",
    "PortInUseError",
    # the run store's and batonflow.rag's store errors: they name the store and the fix
    "CheckpointError",
    "StoreUnavailableError",
    "StoreLockedError",
    "StoreConfigError",
    "CollectionNotFoundError",
    # batonflow.client: the server's own sentence, after its status code
    "APIError",
    "AuthenticationError",
    "ClientTimeoutError",
    "ConflictError",
    "EventStreamError",
    "InvalidRequestError",
    "NotFoundError",
    "ServerUnavailableError",
)


def debug_enabled(flag: bool) -> bool:
    """``--debug`` given, or ``BATONFLOW_DEBUG`` set to a true value."""
    return flag or os.environ.get("BATONFLOW_DEBUG", "").lower() in {"1", "true", "yes"}


def one_line(exc: BaseException) -> str:
    """The error as one line: its message (with the type name when it is not ours)."""
    text = " ".join(str(exc).split())
    if text and any(cls.__name__ in _SELF_EXPLAINING for cls in type(exc).__mro__):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def cli_errors(debug: bool) -> Iterator[None]:
    """Turn an exception into ``error: <one line>`` and exit code 1 (a traceback with debug)."""
    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None
    except Exception as exc:
        if debug_enabled(debug):
            traceback.print_exc(file=sys.stderr)
        else:
            print(f"error: {one_line(exc)}", file=sys.stderr)
        raise typer.Exit(1) from None


def print_json(data: Any, file: IO[str] | None = None) -> None:
    """One line of JSON on ``file`` (stdout)."""
    file = file or sys.stdout
    file.write(json.dumps(jsonable(data), ensure_ascii=False) + "\n")
    file.flush()


def _agent_answer(result: Any) -> str | None:
    """The answer text of an agent's result (``AgentOutput``, ``AgentResult``), else ``None``."""
    # Read from the loaded modules: an agent's result exists only once batonflow.agents is
    # imported, and other runs must not pay for importing it (llama-index).
    events = sys.modules.get("batonflow.agents.events")
    results = sys.modules.get("batonflow.agents.results")
    if events is not None and isinstance(result, events.AgentOutput):
        return str(result)
    if results is not None and isinstance(result, results.AgentResult):
        return str(result)
    return None


def print_result(result: Any) -> None:
    """A run's result for humans: an agent's answer text, text as is, else indented JSON."""
    answer = _agent_answer(result)
    if answer is not None:
        result = answer
    if isinstance(result, str):
        out.print(result, markup=False)
    else:
        out.print_json(json.dumps(jsonable(result), ensure_ascii=False))


def _user_named_service() -> bool:
    """Whether OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names the service."""
    if os.environ.get("OTEL_SERVICE_NAME", "").strip():
        return True
    attributes = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    return any(item.partition("=")[0].strip() == "service.name" for item in attributes.split(","))


def setup_tracing(service_name: str = "batonflow") -> str:
    """Configure tracing from ``OTEL_*`` when asked for; return where the traces go."""
    from .config import Settings

    settings = Settings.load()
    if not settings.tracing_configured:
        return (
            "not exported (no OTEL_* variables; set OTEL_EXPORTER_OTLP_ENDPOINT="
            "http://localhost:4318 to send them to Jaeger)"
        )
    from batonflow.observability import configure_tracing

    # Our name is only a default: a name the user gave through OTEL_* wins.
    handle = configure_tracing(service_name=None if _user_named_service() else service_name)
    if not handle.enabled:
        return "not exported (OTEL_TRACES_EXPORTER=none)"
    where = ", ".join(handle.exporters)
    if handle.endpoint:
        where += f" → {handle.endpoint}"
    return where
