"""compose.yaml and docs/deploy.md describe the same deployment (Docker itself is not here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
DOC = (ROOT / "docs" / "deploy.md").read_text()


def test_compose_runs_postgres_two_replicas_qdrant_and_jaeger():
    """The services the docs promise are there, with their images and published ports."""
    services = COMPOSE["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["qdrant"]["image"].startswith("qdrant/qdrant")
    assert services["jaeger"]["image"].startswith("jaegertracing/jaeger")
    replicas = [name for name, s in services.items() if "build" in s]
    assert sorted(replicas) == ["batonflow-1", "batonflow-2"]
    ports = {name: s.get("ports", []) for name, s in services.items()}
    assert ports["batonflow-1"] == ["8001:8000"] and ports["batonflow-2"] == ["8002:8000"]
    assert "6333:6333" in ports["qdrant"]
    assert {"16686:16686", "4318:4318"} <= set(ports["jaeger"])
    assert (ROOT / "Dockerfile").exists()


def test_replicas_share_one_database_and_have_distinct_ids():
    """Both replicas use the same PostgreSQL URL, pointing at the compose database."""
    services = COMPOSE["services"]
    envs = [services[name]["environment"] for name in ("batonflow-1", "batonflow-2")]
    urls = {env["BATONFLOW_DATABASE_URL"] for env in envs}
    assert len(urls) == 1
    (url,) = urls
    pg = services["postgres"]["environment"]
    assert url == (
        f"postgresql://{pg['POSTGRES_USER']}:{pg['POSTGRES_PASSWORD']}@postgres:5432/"
        f"{pg['POSTGRES_DB']}"
    )
    assert envs[0]["BATONFLOW_REPLICA_ID"] != envs[1]["BATONFLOW_REPLICA_ID"]
    assert envs[0]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"
    assert envs[0]["BATONFLOW_QDRANT_URL"] == "http://qdrant:6333"


def test_every_variable_compose_sets_is_documented():
    """Each BATONFLOW_/OTEL_ variable of compose.yaml is in the settings table of deploy.md."""
    env = COMPOSE["services"]["batonflow-1"]["environment"]
    documented = set(re.findall(r"^\| `((?:BATONFLOW|OTEL)_[A-Z_]+)`", DOC, flags=re.M))
    assert set(env) <= documented, set(env) - documented
    for image in ("postgres:16", "qdrant/qdrant", "jaegertracing/jaeger"):
        assert image in DOC
