"""A collector that is down (or hangs) costs one warning line at exit, not a 10 s hang."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from batonflow.observability import configure_tracing

SCRIPT = Path(sys.executable).with_name("batonflow")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_refused_connection_is_one_warning_without_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing listening: shutdown drops the spans with one warning naming the URL and fix."""
    port = _closed_port()
    handle = configure_tracing(
        "down", endpoint=f"http://127.0.0.1:{port}", instrument_llama_index=False
    )
    assert handle.tracer_provider is not None
    handle.tracer_provider.get_tracer("t").start_span("lost").end()
    with caplog.at_level(logging.WARNING):
        handle.shutdown()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert messages == [
        f"traces not sent: the collector at http://127.0.0.1:{port}/v1/traces did not answer "
        "(connection refused); start it (e.g. Jaeger, OTLP on port 4318) or unset "
        "OTEL_EXPORTER_OTLP_ENDPOINT."
    ]


def test_collector_that_never_answers_is_bounded_by_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A collector that takes the connection but never answers: shutdown(timeout) returns."""
    with socket.socket() as listener:  # accepts TCP connections (the backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        silent_port = int(listener.getsockname()[1])
        handle = configure_tracing(
            "hang", endpoint=f"http://127.0.0.1:{silent_port}", instrument_llama_index=False
        )
        assert handle.tracer_provider is not None
        handle.tracer_provider.get_tracer("t").start_span("stuck").end()
        with caplog.at_level(logging.WARNING, logger="batonflow.observability"):
            handle.shutdown(timeout=0.3)
    # Closing the listener resets the pending request; the exporter was shut down, so it does
    # not retry and the background shutdown ends.
    assert handle._shutdown_thread is not None
    handle._shutdown_thread.join(30)
    assert not handle._shutdown_thread.is_alive()
    assert [r.getMessage() for r in caplog.records if r.name == "batonflow.observability"] == [
        f"traces not sent: the collector at http://127.0.0.1:{silent_port}/v1/traces did not "
        "take them within 0.3 s; check that it runs, or unset OTEL_EXPORTER_OTLP_ENDPOINT."
    ]


@pytest.mark.skipif(not SCRIPT.exists(), reason="the console script is not installed")
def test_cli_with_collector_down_prints_one_line_and_exits_0(tmp_path: Path) -> None:
    """The CLI prints its result, then one warning line; no SDK retry noise."""
    port = _closed_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
    proc = subprocess.run(
        [str(SCRIPT), "run", "accumulate", "--set", "numbers=[1, 2]", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"result": "Sum: 3, count: 2"' in proc.stdout
    warnings = [ln for ln in proc.stderr.splitlines() if not ln.startswith("Running total")]
    assert warnings == [
        f"traces not sent: the collector at http://127.0.0.1:{port}/v1/traces did not answer "
        "(connection refused); start it (e.g. Jaeger, OTLP on port 4318) or unset "
        "OTEL_EXPORTER_OTLP_ENDPOINT."
    ]


def test_exports_while_running_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    """Spans exported as they end, to a collector that is down: one warning in all, no retries."""
    port = _closed_port()
    handle = configure_tracing(
        "down-live",
        endpoint=f"http://127.0.0.1:{port}",
        span_processor="simple",
        instrument_llama_index=False,
    )
    assert handle.tracer_provider is not None
    with caplog.at_level(logging.INFO):
        for name in ("a", "b", "c"):
            handle.tracer_provider.get_tracer("t").start_span(name).end()
        handle.shutdown()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(messages) == 1 and messages[0].startswith("traces not sent:"), messages
