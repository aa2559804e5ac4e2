"""Which runs in flight a server's code cannot continue: ``GET /workflows/{name}/check``.

The HTTP form of ``batonflow runs check`` (see :mod:`batonflow.core.durable._versions`): each
run of workflow ``name`` that is running, waiting or interrupted is checked against the code
this server serves under that name. A replica started with new code answers it before the
others are replaced: what it lists, it would leave to them. Nothing is written.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException

from .api_models import responses


def install_versions(app: FastAPI, manager: Any) -> None:
    """Add ``GET /workflows/{name}/check`` to ``app`` for ``manager``'s workflows."""

    @app.get(
        "/workflows/{name}/check",
        summary="The runs in flight this server's code cannot continue",
        responses=responses(
            200,
            None,
            "The workflow's version here, how many runs in flight were checked, and each "
            "one this code cannot continue with its reasons.",
            404,
        ),
    )
    async def check_runs(name: str) -> dict[str, Any]:
        checkpointer = manager.checkpointers.get(name)
        if checkpointer is None:
            raise HTTPException(
                404, f"No workflow {name!r} is served here; GET /workflows lists them."
            )
        checks = checkpointer.check_runs([name])
        return {
            "workflow": name,
            "version": checkpointer.workflow.version,
            "checked": len(checks),
            "incompatible": [c.to_dict() for c in checks if not c.ok],
        }


__all__ = ["install_versions"]
