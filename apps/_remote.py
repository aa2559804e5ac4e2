"""The command line's ``--server URL`` variants: ``run`` and ``runs`` through batonflow.client.

They do over HTTP what the local variants do on this machine, and print the same way: the
result of a run (answering its questions from ``--answer`` or stdin), a run's record, the
list of runs, a cancellation.
"""

from __future__ import annotations

import os
from typing import Any

from ._console import err, print_json
from ._stream_printer import StreamPrinter

#: The server URL when ``--server`` is not given (empty: the local run store).
SERVER_ENV = "BATONFLOW_SERVER"


def server_url(flag: str | None) -> str | None:
    """``--server``, else ``BATONFLOW_SERVER``, else ``None`` (work locally)."""
    return flag or os.environ.get(SERVER_ENV) or None


def connect(url: str, token: str | None) -> Any:
    """A :class:`batonflow.client.Client` for ``url`` (token: flag, then the environment)."""
    from batonflow._extras import require_extra

    require_extra("batonflow --server", "client", {"httpx": "httpx", "httpx_sse": "httpx-sse"})
    from batonflow.client import Client

    return Client(url, token=token or os.environ.get("BATONFLOW_API_TOKEN") or None)


def run_remote(
    url: str,
    token: str | None,
    flow: str,
    fields: dict[str, Any],
    *,
    stream: bool,
    as_json: bool,
    answers: list[str],
    ask: Any,
    stdout: Any,
    printer: StreamPrinter,
    sets: list[str] | None = None,
    idempotency_key: str | None = None,
    budget: str | None = None,
) -> tuple[Any, str]:
    """Start ``flow`` on the server (with its ``budget``, if any), follow it, answer its questions; return (result, run id).

    ``printer`` shows the stream to people (with ``stream`` and without ``as_json``) and keeps
    an agent's answer. ``sets`` are the ``--set`` items ``fields`` were parsed from: a value
    whose field takes text but not its JSON value is sent as the text it was written as.

    Raises:
        BadParameterError: The run did not complete (its error is the message).
    """
    from ._child_answers import remote_question
    from .registry import BadParameterError

    pending = list(answers)
    with connect(url, token) as client:
        if sets:
            from .registry import text_where_expected

            served = {w["name"]: w for w in client.workflows()}
            if flow in served:
                fields = text_where_expected(fields, sets, served[flow]["start_event"])
        run = client.start(flow, fields, idempotency_key=idempotency_key, budget=budget)
        err.print(f"run {run.run_id} on {client.base_url}", markup=False)
        for event in client.events(run.run_id):
            if event.is_end:
                break
            if event.type == "StopEvent":
                continue
            if stream and as_json:
                print_json({"event": {k: v for k, v in event.data.items() if k != "seq"}}, stdout)
            elif printer.wants(event.type):
                printer.show(event.type, str(event.data.get("qualified_name", "")), event.value)
            child_asks = remote_question(event.type, event.value)  # a child run's question
            if event.type == "InputRequiredEvent" or "waiting_for" in event.data or child_asks:
                printer.close()
                prefix = child_asks or str(event.value.get("prefix") or "> ")
                answer = pending.pop(0) if pending else ask(prefix)
                _answer(client, run.run_id, answer)
        printer.close()
        done = client.get(run.run_id)
    if done.status != "completed":
        raise BadParameterError(
            f"Run {done.run_id} on {url} ended {done.status}: {done.error or 'no error given'}"
        )
    return done.result, done.run_id


def _answer(client: Any, run_id: str, text: str) -> None:
    """Answer the run's question with ``text`` (a JSON object: the answer's fields); the
    answer is built from what the run waits for (see ``Client.answer``)."""
    import json

    from batonflow.client import InvalidRequestError

    from .registry import BadParameterError

    fields: Any = None
    if text.lstrip().startswith("{"):
        try:
            fields = json.loads(text)
        except ValueError:
            fields = None
    try:
        if isinstance(fields, dict):
            client.answer(run_id, None, fields=fields)
        else:
            client.answer(run_id, text)
    except InvalidRequestError as exc:
        raise BadParameterError(
            f"The server refused the answer {text!r}: {exc.detail} (pass --answer as that "
            "value, or the answer's fields as a JSON object)"
        ) from None


def list_remote(
    url: str, token: str | None, workflow: str | None, status: str | None, limit: int
) -> list[dict[str, Any]]:
    """The server's runs as rows like the local ones (``source`` = the server's URL)."""
    with connect(url, token) as client:
        runs = client.list(workflow=workflow, status=status, limit=limit)
    return [{**run.raw, "source": url} for run in runs]


def show_remote(url: str, token: str | None, run_id: str, events: bool) -> dict[str, Any]:
    """One run from the server; with ``events``, what it streamed (once it has ended)."""
    with connect(url, token) as client:
        run = client.get(run_id)
        data: dict[str, Any] = {**run.raw, "source": url, "checkpoints": []}
        data["children"] = client.lineage(run_id)["children"]
        if events and run.done:
            data["events"] = [event.data for event in client.events(run_id)]
    return data


def cancel_remote(url: str, token: str | None, run_id: str) -> str:
    """Cancel a run on the server; return its final status."""
    with connect(url, token) as client:
        status: str = client.cancel(run_id).status
    return status


__all__ = [
    "SERVER_ENV",
    "cancel_remote",
    "connect",
    "list_remote",
    "run_remote",
    "server_url",
    "show_remote",
]
