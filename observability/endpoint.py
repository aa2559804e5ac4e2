"""Where spans go: the exporter names, protocol and OTLP endpoint, from arguments or ``OTEL_*``.

The OpenTelemetry SDK reads few of the standard variables by itself when it is set up by hand:
``OTEL_TRACES_EXPORTER`` and ``OTEL_EXPORTER_OTLP_PROTOCOL`` are only read by the
auto-instrumentation agent. This module reads them (and the endpoint variables) so that
``configure_tracing()`` behaves the way the variables promise, and it guards against the usual
mistake: an OTLP/HTTP endpoint given without its ``/v1/traces`` path, which makes the exporter
post to ``/`` and lose every span.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from batonflow.core.errors import WorkflowConfigurationError

TRACES_PATH = "/v1/traces"
DEFAULT_HTTP_ENDPOINT = "http://localhost:4318" + TRACES_PATH
EXPORTERS = ("otlp", "console", "none")
PROTOCOLS = ("http/protobuf", "grpc")


class TracingConfigurationError(WorkflowConfigurationError, ValueError):
    """A tracing option or ``OTEL_*`` variable has a value that cannot work."""


def _env(environ: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def resolve_exporters(exporter: str | None, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The exporter names to use: ``exporter`` if given, else ``OTEL_TRACES_EXPORTER``, else otlp.

    Args:
        exporter: ``"otlp"``, ``"console"``, ``"none"``, a comma-separated list of them, or
            ``None`` to read ``OTEL_TRACES_EXPORTER``.
        environ: The environment to read (``os.environ`` by default).

    Returns:
        The names, without duplicates; ``[]`` means tracing is off.

    Raises:
        TracingConfigurationError: an unknown exporter name.
    """
    if _env(environ, "OTEL_SDK_DISABLED") == "true":
        return []
    source = "exporter="
    if exporter is None:
        exporter = _env(environ, "OTEL_TRACES_EXPORTER") or "otlp"
        source = "OTEL_TRACES_EXPORTER="
    names = list(dict.fromkeys(n.strip().lower() for n in exporter.split(",") if n.strip()))
    for name in names:
        if name not in EXPORTERS:
            hint = (
                " Jaeger and Zipkin both receive OTLP: use 'otlp' and point "
                "OTEL_EXPORTER_OTLP_ENDPOINT at them."
                if name in ("jaeger", "zipkin")
                else ""
            )
            raise TracingConfigurationError(
                f"Unknown trace exporter {name!r} in {source}{exporter!r}.{hint} "
                f"Use one of {', '.join(EXPORTERS)}."
            )
    if "none" in names:
        return []
    return names


def resolve_protocol(protocol: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The OTLP protocol: ``protocol`` if given, else the ``OTEL_EXPORTER_OTLP_*PROTOCOL`` vars.

    Raises:
        TracingConfigurationError: a protocol other than ``http/protobuf`` or ``grpc``.
    """
    value = protocol or _env(
        environ, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"
    )
    value = (value or "http/protobuf").strip().lower()
    if value not in PROTOCOLS:
        raise TracingConfigurationError(
            f"OTLP protocol {value!r} is not supported (the Python exporter has no http/json). "
            "Set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or pass protocol='http/protobuf')."
        )
    return value


def traces_url(base: str) -> str:
    """``base`` with ``/v1/traces`` appended to its path (``http://h:4318`` → ``…/v1/traces``)."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if not path.endswith(TRACES_PATH):
        path += TRACES_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def _check_url(url: str, source: str, protocol: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TracingConfigurationError(
            f"{source}{url!r} is not an http(s) URL. "
            "Give the collector's address, e.g. http://localhost:4318."
        )
    if parts.port == 16686:
        raise TracingConfigurationError(
            f"{source}{url!r} is Jaeger's UI port (16686), which does not receive spans. "
            "Send OTLP/HTTP to port 4318, e.g. http://localhost:4318."
        )
    if parts.port == 4317 and protocol == "http/protobuf":
        raise TracingConfigurationError(
            f"{source}{url!r} is the OTLP/gRPC port (4317) but the protocol is http/protobuf. "
            "Use port 4318 (e.g. http://localhost:4318), or set "
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc with the gRPC exporter installed."
        )


def resolve_endpoint(
    endpoint: str | None, protocol: str, environ: Mapping[str, str] = os.environ
) -> str:
    """The full URL the OTLP exporter posts spans to.

    Order: ``endpoint``, then ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, then
    ``OTEL_EXPORTER_OTLP_ENDPOINT``, then ``http://localhost:4318``. For http/protobuf a URL
    with no path (a collector or Jaeger base URL) gets ``/v1/traces`` appended; so does every
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the spec says it is a base URL). A URL that already has
    a path other than ``/`` is used as it is, for collectors behind a proxy path.

    Raises:
        TracingConfigurationError: not an http(s) URL, Jaeger's UI port, or the gRPC port with
            http/protobuf.
    """
    if endpoint is not None:
        source, url, base = "endpoint=", endpoint.strip(), False
    elif (value := _env(environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) is not None:
        source, url, base = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", value, False
    elif (value := _env(environ, "OTEL_EXPORTER_OTLP_ENDPOINT")) is not None:
        source, url, base = "OTEL_EXPORTER_OTLP_ENDPOINT=", value, True
    else:
        default = "http://localhost:4317" if protocol == "grpc" else DEFAULT_HTTP_ENDPOINT
        return default
    _check_url(url, source, protocol)
    if protocol == "grpc":
        return url
    if base or urlsplit(url).path in ("", "/"):
        return traces_url(url)
    return url


__all__ = [
    "DEFAULT_HTTP_ENDPOINT",
    "TracingConfigurationError",
    "resolve_endpoint",
    "resolve_exporters",
    "resolve_protocol",
    "traces_url",
]
