"""The run statuses the server and ``batonflow runs`` show, without loading the run store.

``batonflow runs --help`` lists them; importing :mod:`batonflow.apps.run_store` for that would
load the engine (see bench/startup.py).
"""

from __future__ import annotations

#: Statuses of a run that has ended; nothing changes it any more.
FINISHED = frozenset({"completed", "failed", "cancelled"})
#: Every status, in the one vocabulary of the store.
STATUSES = ("running", "waiting", "completed", "failed", "cancelled", "interrupted", "queued")
