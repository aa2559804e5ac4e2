"""batonflow.core: the event-driven workflow engine.

This module is the one public door: every public name of the engine is re-exported here and
listed in ``__all__``.
"""

from .errors import BatonflowError as BatonflowError
from .errors import WorkflowValidationError as WorkflowValidationError
from .events import Event as Event
from .events import HumanResponseEvent as HumanResponseEvent
from .events import InputRequiredEvent as InputRequiredEvent
from .events import StartEvent as StartEvent
from .events import StopEvent as StopEvent

__all__ = [
    "BatonflowError",
    "Event",
    "HumanResponseEvent",
    "InputRequiredEvent",
    "StartEvent",
    "StopEvent",
    "WorkflowValidationError",
]
