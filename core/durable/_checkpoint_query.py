"""Reading a checkpointer's checkpoints back: all of them by run, or filtered.

These functions are members of :class:`~batonflow.core.checkpoints.WorkflowCheckpointer`
(bound in its class body).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data.events import Event
from ..data.serialization import qualified_name
from ._records import Checkpoint

if TYPE_CHECKING:
    from .checkpoints import WorkflowCheckpointer


def checkpoints(self: WorkflowCheckpointer) -> dict[str, list[Checkpoint]]:
    """The step checkpoints of this workflow's runs in the store, by run id."""
    return {
        record.run_id: [c for c in self.store.list(record.run_id) if c.step_name is not None]
        for record in self.store.runs(workflow_name=self.workflow.workflow_name)
    }


def filter_checkpoints(
    self: WorkflowCheckpointer,
    run_id: str | None = None,
    last_completed_step: str | None = None,
    input_event_type: type[Event] | str | None = None,
    output_event_type: type[Event] | str | None = None,
) -> list[Checkpoint]:
    """The checkpoints matching every given criterion, oldest first within a run.

    Args:
        run_id: Only this run.
        last_completed_step: Only checkpoints taken after this step.
        input_event_type: Only steps that ran on this event class (or its name).
        output_event_type: Only steps that returned this event class (or its name).
    """
    wanted_in = _type_name(input_event_type)
    wanted_out = _type_name(output_event_type)
    found: list[Checkpoint] = []
    for rid, cps in self.checkpoints.items():
        if run_id is not None and rid != run_id:
            continue
        for cp in cps:
            if last_completed_step is not None and cp.step_name != last_completed_step:
                continue
            if wanted_in is not None and not _same_type(cp.input_event_type, wanted_in):
                continue
            if wanted_out is not None and not any(
                _same_type(t, wanted_out) for t in cp.output_event_types
            ):
                continue
            found.append(cp)
    return found


def _type_name(t: type[Event] | str | None) -> str | None:
    if t is None or isinstance(t, str):
        return t
    return qualified_name(t)


def _same_type(recorded: str | None, wanted: str) -> bool:
    if recorded is None:
        return False
    if ":" in wanted:
        return recorded == wanted
    # A bare or dotted class name matches the end of "module:QualName".
    dotted = recorded.replace(":", ".")
    return dotted == wanted or dotted.endswith("." + wanted)
