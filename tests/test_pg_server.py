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


def test_missing_binaries_skip_locally_and_fail_under_ci(monkeypatch):
    """Without initdb/pg_ctl a test is skipped with the install command, but fails in CI."""
    import pg_server

    monkeypatch.setattr(pg_server, "find_bindir", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install postgresql"):
        with pg_server.running_server():
            pass
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the PostgreSQL tests"):
        with pg_server.running_server():
            pass


def test_a_server_restarted_or_killed_comes_back_on_its_port_with_its_data():
    """restart_fast and kill_postmaster + start_server keep the port and the data."""
    import pg_server

    with pg_server.running_server() as server:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (x int)")
        first = server.postmaster_pid()
        pg_server.restart_fast(server)
        second = server.postmaster_pid()
        assert second is not None and second != first
        killed = pg_server.kill_postmaster(server)
        assert killed == second and server.postmaster_pid() is None
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(server.url(), connect_timeout=2).close()
        pg_server.start_server(server)
        with psycopg.connect(server.url()) as conn:
            assert conn.execute("SELECT to_regclass('public.kept')").fetchone() == ("kept",)
    assert not server.datadir.exists()
