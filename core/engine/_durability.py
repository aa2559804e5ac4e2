"""The engine's socket for durable runs: what ``Workflow(checkpoint_store=...)`` turns into.

Durable runs build on the engine (``core/durable`` imports it), so the engine never imports
them. ``core/durable/stores.py`` plugs in, when it is imported, the function that makes a
workflow durable (it opens the store a path or URL names and wraps the workflow in a
``WorkflowCheckpointer``); ``Workflow.__init__`` calls it through :func:`make_durable`.
``batonflow.core`` imports its durable room with the engine, so every public import path finds
the socket filled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import WorkflowConfigurationError

if TYPE_CHECKING:
    from .context import Context
    from .handler import WorkflowHandler
    from .workflow import Workflow


class Durable(Protocol):
    """What a workflow made durable asks of its checkpointer."""

    @property
    def store(self) -> Any:
        """The checkpoint store runs are recorded in."""
        ...

    def _run_durable(self, ctx: Context[Any] | None, **kwargs: Any) -> WorkflowHandler:
        """Start (or continue) a run that is checkpointed at every step boundary."""
        ...

    def resume(self, run_id: str) -> WorkflowHandler:
        """Continue run ``run_id`` from its latest checkpoint."""
        ...


#: Makes ``workflow`` durable on the store ``checkpoint_store`` names (a store, path or URL).
MakeDurable = Callable[["Workflow", Any], Durable]

#: The one function plugged in (by ``core/durable/stores.py``), in a one-item list.
_PLUGGED: list[MakeDurable] = []


def plug_durability(make: MakeDurable) -> None:
    """Plug in the function ``Workflow(checkpoint_store=...)`` makes a workflow durable with."""
    _PLUGGED[:] = [make]


def make_durable(workflow: Workflow, checkpoint_store: Any) -> Durable:
    """The checkpointer of ``workflow`` on ``checkpoint_store`` (a store, path or URL).

    Raises:
        WorkflowConfigurationError: ``checkpoint_store`` is not a store, path or URL, or no
            durable room was imported (only when the engine is imported without
            ``batonflow.core``).
    """
    if not _PLUGGED:
        raise WorkflowConfigurationError(
            f"checkpoint_store= needs batonflow's durable runs, which were not imported; "
            f"import batonflow.core before creating {type(workflow).__name__}."
        )
    return _PLUGGED[0](workflow, checkpoint_store)
