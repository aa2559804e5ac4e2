"""Settings of the command line and the server: flags, then environment, then defaults.

Every setting has one environment variable (``BATONFLOW_*``, plus the standard
``OPENAI_API_KEY`` and ``OTEL_*``) and one default. A flag given on the command line wins over
the environment, which wins over the default::

    settings = Settings.load(port=9000)          # flag values; None means "not given"
    settings.port, settings.db_path, settings.api_token

=========================  ==============================  =========================
setting                    environment variable            default
=========================  ==============================  =========================
``home``                   ``BATONFLOW_HOME``              ``.batonflow``
``db_path``                ``BATONFLOW_DB``                ``<home>/runs.db``
``database_url``           ``BATONFLOW_DATABASE_URL``      none (the SQLite ``db_path``)
``lease_seconds``          ``BATONFLOW_LEASE_SECONDS``     ``15`` (replicas on PostgreSQL)
``replica_id``             ``BATONFLOW_REPLICA_ID``        ``<host>-<pid>``
``outage_seconds``         ``BATONFLOW_OUTAGE_SECONDS``    ``60`` (PostgreSQL away)
``qdrant_path``            ``BATONFLOW_QDRANT_PATH``       ``<home>/qdrant``
``qdrant_url``             ``BATONFLOW_QDRANT_URL``        none (local embedded Qdrant)
``collection``             ``BATONFLOW_COLLECTION``        ``docs``
``host``                   ``BATONFLOW_HOST``              ``127.0.0.1``
``port``                   ``BATONFLOW_PORT``              ``8000``
``api_token``              ``BATONFLOW_API_TOKEN``         none (no auth)
``max_body_bytes``         ``BATONFLOW_MAX_BODY_BYTES``    ``1048576``
``model``                  ``BATONFLOW_MODEL``             ``gpt-4o-mini``
``openai_api_key``         ``OPENAI_API_KEY``              none (offline flows only)
=========================  ==============================  =========================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A setting has a value that cannot work; the message names the setting and the fix."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved settings of one command or server."""

    home: Path = Path(".batonflow")
    db_path: Path = Path(".batonflow/runs.db")
    database_url: str | None = None
    lease_seconds: float = 15.0
    replica_id: str | None = None
    outage_seconds: float = 60.0
    qdrant_path: Path = Path(".batonflow/qdrant")
    qdrant_url: str | None = None
    collection: str = "docs"
    host: str = "127.0.0.1"
    port: int = 8000
    api_token: str | None = None
    max_body_bytes: int = 1024 * 1024
    model: str = "gpt-4o-mini"
    openai_api_key: str | None = None
    otel_endpoint: str | None = None
    otel_exporter: str | None = None
    keep_finished: str | None = None
    keep_finished_for: tuple[str, ...] = ()

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, **flags: Any) -> Settings:
        """Resolve settings from ``flags`` (``None`` = not given), then ``env``, then defaults.

        Args:
            env: The environment to read; ``os.environ`` when omitted.
            **flags: Values from the command line, by setting name.

        Returns:
            The resolved settings.

        Raises:
            ConfigError: A numeric setting that is not a number, or an unknown flag name.
        """
        env = os.environ if env is None else env
        db = flags.pop("db", None)
        if db is not None:  # --db: a SQLite path or a database URL
            key = "database_url" if "://" in str(db) else "db_path"
            flags.setdefault(key, db)
        known = {f.name for f in fields(cls)}
        unknown = set(flags) - known
        if unknown:
            raise ConfigError(f"Unknown setting(s) {sorted(unknown)}; known: {sorted(known)}.")

        def pick(name: str, var: str) -> str | None:
            flag = flags.get(name)
            if flag is not None:
                return str(flag)
            value = env.get(var)
            return value if value not in (None, "") else None

        home = Path(pick("home", "BATONFLOW_HOME") or ".batonflow")
        values: dict[str, Any] = {
            "home": home,
            "db_path": Path(pick("db_path", "BATONFLOW_DB") or home / "runs.db"),
            # A --db path given on the command line wins over the URL in the environment.
            "database_url": None
            if flags.get("db_path") is not None
            else pick("database_url", "BATONFLOW_DATABASE_URL"),
            "lease_seconds": _as_float(
                pick("lease_seconds", "BATONFLOW_LEASE_SECONDS"),
                15.0,
                "lease_seconds",
                "BATONFLOW_LEASE_SECONDS",
            ),
            "replica_id": pick("replica_id", "BATONFLOW_REPLICA_ID"),
            "outage_seconds": _as_float(
                pick("outage_seconds", "BATONFLOW_OUTAGE_SECONDS"),
                60.0,
                "outage_seconds",
                "BATONFLOW_OUTAGE_SECONDS",
            ),
            "qdrant_path": Path(pick("qdrant_path", "BATONFLOW_QDRANT_PATH") or home / "qdrant"),
            "qdrant_url": pick("qdrant_url", "BATONFLOW_QDRANT_URL"),
            "collection": pick("collection", "BATONFLOW_COLLECTION") or "docs",
            "host": pick("host", "BATONFLOW_HOST") or "127.0.0.1",
            "port": _as_int(pick("port", "BATONFLOW_PORT"), 8000, "port", "BATONFLOW_PORT"),
            "api_token": pick("api_token", "BATONFLOW_API_TOKEN"),
            "max_body_bytes": _as_int(
                pick("max_body_bytes", "BATONFLOW_MAX_BODY_BYTES"),
                1024 * 1024,
                "max_body_bytes",
                "BATONFLOW_MAX_BODY_BYTES",
            ),
            "model": pick("model", "BATONFLOW_MODEL") or "gpt-4o-mini",
            "openai_api_key": pick("openai_api_key", "OPENAI_API_KEY"),
            "otel_endpoint": pick("otel_endpoint", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            or pick("otel_endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT"),
            "otel_exporter": pick("otel_exporter", "OTEL_TRACES_EXPORTER"),
            "keep_finished": pick("keep_finished", "BATONFLOW_KEEP_FINISHED"),
            "keep_finished_for": tuple(flags.get("keep_finished_for") or ())
            or tuple(
                item.strip()
                for item in env.get("BATONFLOW_KEEP_FINISHED_FOR", "").split(",")
                if item.strip()
            ),
        }
        if values["lease_seconds"] <= 0:
            raise ConfigError(
                f"Lease length {values['lease_seconds']} is not positive; pass "
                "--lease-seconds 15 (or BATONFLOW_LEASE_SECONDS) or more than 0."
            )
        if not 0 <= values["outage_seconds"] < float("inf"):
            raise ConfigError(
                f"Outage budget {values['outage_seconds']} is not a number of seconds from 0; "
                "pass --outage-seconds 60 (or BATONFLOW_OUTAGE_SECONDS)."
            )
        if not 0 <= values["port"] <= 65535:
            raise ConfigError(
                f"Port {values['port']} is out of range; pass --port between 0 and 65535."
            )
        return cls(**values)

    def retention(self) -> Any:
        """The retention policy of ``--keep-finished`` / ``--keep-finished-for``, or ``None``.

        Raises:
            ConfigError: a period is not a duration, or a per-workflow entry is not
                ``NAME=DURATION``.
        """
        if self.keep_finished is None and not self.keep_finished_for:
            return None
        from batonflow.core.retention import Retention

        per_workflow: dict[str, str] = {}
        for item in self.keep_finished_for:
            name, sep, period = item.partition("=")
            if not sep or not name.strip() or not period.strip():
                raise ConfigError(
                    f"--keep-finished-for expects NAME=DURATION, such as reports=90d; got {item!r}."
                )
            per_workflow[name.strip()] = period.strip()
        if self.keep_finished is None:
            raise ConfigError(
                "--keep-finished-for needs --keep-finished too (how long other workflows' runs "
                "are kept), e.g. --keep-finished 7d."
            )
        try:
            return Retention(self.keep_finished, per_workflow=per_workflow)
        except ValueError as exc:
            raise ConfigError(f"--keep-finished: {exc}") from exc

    @property
    def database(self) -> str:
        """The run store: the database URL when one is set, else the SQLite file's path."""
        return self.database_url or str(self.db_path)

    def open_store(self, *, replica: bool = False) -> Any:
        """Open the run store (:func:`batonflow.core.stores.open_store`).

        Args:
            replica: For a server: on a database that several servers share (PostgreSQL),
                join them under :attr:`replica_id` with leases of :attr:`lease_seconds`.
                A database URL's store rides out an outage for :attr:`outage_seconds`.
        """
        from batonflow.core.stores import open_store

        if self.database_url is None:
            return open_store(self.db_path)
        options: dict[str, Any] = {}
        if self.database_url.lower().startswith("postgres"):
            # How long the store rides out a database it cannot reach (PostgreSQL's option).
            options["outage_seconds"] = self.outage_seconds
        if replica:
            import socket  # not at the top: `batonflow --help` needs none of it

            options |= {
                "replica_id": self.replica_id or f"{socket.gethostname()}-{os.getpid()}",
                "lease_seconds": self.lease_seconds,
            }
        return open_store(self.database_url, **options)

    def with_(self, **changes: Any) -> Settings:
        """A copy with some settings changed."""
        return replace(self, **changes)

    @property
    def tracing_configured(self) -> bool:
        """Whether the ``OTEL_*`` variables ask for traces to be exported."""
        if self.otel_exporter is not None:
            return self.otel_exporter.strip().lower() != "none"
        return self.otel_endpoint is not None


def _as_float(raw: str | None, default: float, name: str, var: str) -> float:
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(
            f"Setting {name} must be a number of seconds, got {raw!r}; fix "
            f"--{name.replace('_', '-')} or {var}."
        ) from None


def _as_int(raw: str | None, default: int, name: str, var: str) -> int:
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(
            f"Setting {name} must be a whole number, got {raw!r}; fix --{name.replace('_', '-')} "
            f"or {var}."
        ) from None


__all__ = ["ConfigError", "Settings"]
