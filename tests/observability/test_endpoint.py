"""Where spans go: exporter names, protocol and endpoint from arguments and OTEL_* variables."""

from __future__ import annotations

import pytest
from batonflow.observability import TracingConfigurationError
from batonflow.observability.endpoint import (
    resolve_endpoint,
    resolve_exporters,
    resolve_protocol,
)

HTTP = "http/protobuf"


@pytest.mark.parametrize(
    ("endpoint", "environ", "expected"),
    [
        pytest.param(None, {}, "http://localhost:4318/v1/traces", id="default"),
        pytest.param(
            "http://localhost:4318", {}, "http://localhost:4318/v1/traces", id="jaeger-base-url"
        ),
        pytest.param(
            "http://localhost:4318/",
            {},
            "http://localhost:4318/v1/traces",
            id="base-url-trailing-slash",
        ),
        pytest.param(
            "http://jaeger:4318/v1/traces", {}, "http://jaeger:4318/v1/traces", id="full-url-kept"
        ),
        pytest.param(
            "https://otel.example.com/otlp/v1/traces",
            {},
            "https://otel.example.com/otlp/v1/traces",
            id="proxy-path-kept",
        ),
        pytest.param(
            None,
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
            "http://collector:4318/v1/traces",
            id="env-base",
        ),
        pytest.param(
            None,
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/otlp/"},
            "http://collector:4318/otlp/v1/traces",
            id="env-base-with-path",
        ),
        pytest.param(
            None,
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:4318",
            },
            "http://c:4318/custom",
            id="env-traces-endpoint-wins-as-is",
        ),
        pytest.param(
            None,
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318"},
            "http://c:4318/v1/traces",
            id="env-traces-endpoint-without-path-guarded",
        ),
        pytest.param(
            "http://arg:4318",
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"},
            "http://arg:4318/v1/traces",
            id="argument-beats-env",
        ),
    ],
)
def test_endpoint_resolution(endpoint: str | None, environ: dict[str, str], expected: str) -> None:
    """The OTLP/HTTP URL always ends in the traces path unless a full path was given."""
    assert resolve_endpoint(endpoint, HTTP, environ) == expected


@pytest.mark.parametrize(
    ("endpoint", "match"),
    [
        pytest.param(
            "http://localhost:16686",
            r"Jaeger's UI port.*Send OTLP/HTTP to port 4318",
            id="jaeger-ui-port",
        ),
        pytest.param("http://localhost:4317", r"OTLP/gRPC port.*Use port 4318", id="grpc-port"),
        pytest.param(
            "localhost:4318", r"not an http\(s\) URL.*http://localhost:4318", id="no-scheme"
        ),
    ],
)
def test_endpoint_mistakes_get_a_clear_error(endpoint: str, match: str) -> None:
    """Endpoints that would silently lose spans are refused with the fix in the message."""
    with pytest.raises(TracingConfigurationError, match=match):
        resolve_endpoint(endpoint, HTTP, {})


def test_env_endpoint_mistake_names_the_variable() -> None:
    """A bad OTEL_EXPORTER_OTLP_ENDPOINT is reported under its own name."""
    with pytest.raises(TracingConfigurationError, match="OTEL_EXPORTER_OTLP_ENDPOINT="):
        resolve_endpoint(None, HTTP, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:16686"})


@pytest.mark.parametrize(
    ("exporter", "environ", "expected"),
    [
        pytest.param(None, {}, ["otlp"], id="default-otlp"),
        pytest.param(None, {"OTEL_TRACES_EXPORTER": "console"}, ["console"], id="env-console"),
        pytest.param(
            None, {"OTEL_TRACES_EXPORTER": "otlp, console"}, ["otlp", "console"], id="env-list"
        ),
        pytest.param(None, {"OTEL_TRACES_EXPORTER": "none"}, [], id="env-none"),
        pytest.param(
            "console", {"OTEL_TRACES_EXPORTER": "none"}, ["console"], id="argument-beats-env"
        ),
        pytest.param("otlp", {"OTEL_SDK_DISABLED": "true"}, [], id="sdk-disabled"),
    ],
)
def test_exporter_resolution(
    exporter: str | None, environ: dict[str, str], expected: list[str]
) -> None:
    """OTEL_TRACES_EXPORTER is honoured, and 'none' turns tracing off."""
    assert resolve_exporters(exporter, environ) == expected


def test_unknown_exporter_points_jaeger_users_to_otlp() -> None:
    """The retired 'jaeger' exporter name gets an error telling to use otlp."""
    with pytest.raises(TracingConfigurationError, match=r"'jaeger'.*use 'otlp'.*Use one of"):
        resolve_exporters(None, {"OTEL_TRACES_EXPORTER": "jaeger"})


@pytest.mark.parametrize(
    ("protocol", "environ", "expected"),
    [
        pytest.param(None, {}, "http/protobuf", id="default"),
        pytest.param(None, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc", id="env"),
        pytest.param(
            None,
            {
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            },
            "http/protobuf",
            id="traces-specific-wins",
        ),
    ],
)
def test_protocol_resolution(protocol: str | None, environ: dict[str, str], expected: str) -> None:
    """OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is honoured."""
    assert resolve_protocol(protocol, environ) == expected


def test_http_json_protocol_is_refused() -> None:
    """http/json is not available in Python: the error says to use http/protobuf."""
    with pytest.raises(
        TracingConfigurationError, match="OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
    ):
        resolve_protocol("http/json", {})
