"""Durable runs: checkpoints, the run-store protocol and its stores.

:mod:`.checkpoints` (``WorkflowCheckpointer``) records a run of the engine in a
:class:`~batonflow.core.checkpoints.CheckpointStore`; the records (``_records``), the protocol
(``_store``), the memory store, the SQL schema and store shared with PostgreSQL
(``_sql_schema``, ``_sql_store``) and SQLite's (``_sqlite_*``) sit under it. See
``docs/architecture.md`` for what this room may import.
"""
