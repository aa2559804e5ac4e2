"""The throw-away PostgreSQL server of the tests (tests/pg_server.py) really runs."""

from __future__ import annotations

import pytest

# Other engineers' venvs may predate the postgres extra: `pip install -e '.[dev]'` brings it.
psycopg = pytest.importorskip("psycopg", reason="pip install 'batonflow[postgres]'")


def test_each_test_gets_an_empty_database_of_its_own(postgres_url, postgres_server):
    """A test's database is new, empty, and on the session's loopback server."""
    assert postgres_url.startswith(f"postgresql://batonflow@127.0.0.1:{postgres_server.port}/t_")
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        assert tables == (0,)
        conn.execute("CREATE TABLE marker (x int)")


def test_the_previous_tests_tables_are_gone(postgres_url):
    """Databases are per test: the table the previous test made is not here."""
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute("SELECT to_regclass('public.marker')").fetchone()
        assert found == (None,)
