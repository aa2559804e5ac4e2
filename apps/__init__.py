"""batonflow.apps: the ``batonflow`` command line and the HTTP server.

* :mod:`batonflow.apps.cli` — the ``batonflow`` console script (also ``python -m batonflow.apps``).
* :func:`create_app` — a FastAPI app serving workflows: runs, SSE event streams, human in the
  loop, cancel; :class:`BackgroundServer` runs one in a thread; :func:`serve` with uvicorn.
* :class:`RunStore` — the durable record of server runs (SQLite, ``.batonflow/runs.db``).
* :class:`Settings` — flags, then ``BATONFLOW_*`` / ``OPENAI_API_KEY`` / ``OTEL_*``, then defaults.

Importing this package is cheap: FastAPI and uvicorn load when the server is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Settings as Settings
    from .run_store import RunStore as RunStore
    from .server import BackgroundServer as BackgroundServer
    from .server import create_app as create_app
    from .server import serve as serve

_LAZY = {
    "BackgroundServer": "server",
    "RunStore": "run_store",
    "Settings": "config",
    "create_app": "server",
    "serve": "server",
}

__all__ = ["BackgroundServer", "RunStore", "Settings", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'batonflow.apps' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)
