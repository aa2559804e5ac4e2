"""batonflow.core: the event-driven workflow engine.

This module is the one public door: every public name of the engine is re-exported here and
listed in ``__all__``.
"""

import importlib
from typing import TYPE_CHECKING, Any

# Registers how workflows and handlers show in notebooks (the engine asks, the drawing answers;
# the drawing loads when something is first shown).
from . import notebook as notebook

# The alias module is imported before the retry_policy function is bound below, so that
# `import batonflow.core.retry_policy` later never replaces the function (see retry_policy.py).
from . import retry_policy as _retry_policy_module  # noqa: F401
from .collect import All as All
from .collect import Collect as Collect
from .collect import Take as Take
from .context import Context as Context
from .engine._durability import make_durable as _make_durable
from .engine._durability import plug_durability as _plug_durability
from .errors import BatonflowError as BatonflowError
from .errors import BudgetExceededError as BudgetExceededError
from .errors import CheckpointError as CheckpointError
from .errors import ContextSerdeError as ContextSerdeError
from .errors import ContextStateError as ContextStateError
from .errors import DuplicateStartError as DuplicateStartError
from .errors import IdempotencyKeyError as IdempotencyKeyError
from .errors import IncompatibleRunError as IncompatibleRunError
from .errors import JournalMismatchError as JournalMismatchError
from .errors import LeaseLostError as LeaseLostError
from .errors import QueueFullError as QueueFullError
from .errors import ResourceError as ResourceError
from .errors import RunBusyError as RunBusyError
from .errors import RunConflictError as RunConflictError
from .errors import SerializationError as SerializationError
from .errors import StartEventError as StartEventError
from .errors import StateError as StateError
from .errors import StateKeyError as StateKeyError
from .errors import StateTypeError as StateTypeError
from .errors import StateValidationError as StateValidationError
from .errors import StepTimeoutError as StepTimeoutError
from .errors import StoreCorruptError as StoreCorruptError
from .errors import StoreFullError as StoreFullError
from .errors import StoreLockedError as StoreLockedError
from .errors import StoreReadOnlyError as StoreReadOnlyError
from .errors import StoreUnreachableError as StoreUnreachableError
from .errors import UnstorableTextError as UnstorableTextError
from .errors import WorkflowCancelledByUser as WorkflowCancelledByUser
from .errors import WorkflowConfigurationError as WorkflowConfigurationError
from .errors import WorkflowDone as WorkflowDone
from .errors import WorkflowRuntimeError as WorkflowRuntimeError
from .errors import WorkflowStepDoesNotExistError as WorkflowStepDoesNotExistError
from .errors import WorkflowTimeoutError as WorkflowTimeoutError
from .errors import WorkflowValidationError as WorkflowValidationError
from .events import ChildRunEvent as ChildRunEvent
from .events import CollectedEvents as CollectedEvents
from .events import CollectionReleaseEvent as CollectionReleaseEvent
from .events import Event as Event
from .events import HumanResponseEvent as HumanResponseEvent
from .events import IdleReleasedEvent as IdleReleasedEvent
from .events import InputRequiredEvent as InputRequiredEvent
from .events import InternalDispatchEvent as InternalDispatchEvent
from .events import JoinedEvents as JoinedEvents
from .events import SerializableEvent as SerializableEvent
from .events import SerializableException as SerializableException
from .events import SerializableOptionalEvent as SerializableOptionalEvent
from .events import SerializableOptionalException as SerializableOptionalException
from .events import StartEvent as StartEvent
from .events import StepFailedEvent as StepFailedEvent
from .events import StepRestarted as StepRestarted
from .events import StepState as StepState
from .events import StepStateChanged as StepStateChanged
from .events import StopEvent as StopEvent
from .events import UnhandledEvent as UnhandledEvent
from .events import UnreconstructedException as UnreconstructedException
from .events import WorkflowCancelledEvent as WorkflowCancelledEvent
from .events import WorkflowFailedEvent as WorkflowFailedEvent
from .events import WorkflowIdleEvent as WorkflowIdleEvent
from .events import WorkflowTimedOutEvent as WorkflowTimedOutEvent
from .handler import WorkflowHandler as WorkflowHandler
from .hooks import StepBoundary as StepBoundary
from .instrument import Instrument as Instrument
from .instrument import PrintingInstrument as PrintingInstrument
from .resource import Resource as Resource
from .resource import ResourceConfig as ResourceConfig
from .resource import ResourceManager as ResourceManager
from .retry import AnyRetryPolicy as AnyRetryPolicy
from .retry import ConstantDelayRetryPolicy as ConstantDelayRetryPolicy
from .retry import ExponentialBackoffRetryPolicy as ExponentialBackoffRetryPolicy
from .retry import RetryCondition as RetryCondition
from .retry import RetryInfo as RetryInfo
from .retry import RetryPolicy as RetryPolicy
from .retry import RetryPolicyWithoutSeed as RetryPolicyWithoutSeed
from .retry import StopCondition as StopCondition
from .retry import WaitStrategy as WaitStrategy
from .retry import retry_all as retry_all
from .retry import retry_always as retry_always
from .retry import retry_any as retry_any
from .retry import retry_if_exception as retry_if_exception
from .retry import retry_if_exception_cause_type as retry_if_exception_cause_type
from .retry import retry_if_exception_message as retry_if_exception_message
from .retry import retry_if_exception_type as retry_if_exception_type
from .retry import retry_if_not_exception_message as retry_if_not_exception_message
from .retry import retry_if_not_exception_type as retry_if_not_exception_type
from .retry import retry_never as retry_never
from .retry import retry_policy as retry_policy
from .retry import retry_unless_exception_type as retry_unless_exception_type
from .retry import stop_after_attempt as stop_after_attempt
from .retry import stop_after_delay as stop_after_delay
from .retry import stop_all as stop_all
from .retry import stop_any as stop_any
from .retry import stop_before_delay as stop_before_delay
from .retry import stop_never as stop_never
from .retry import wait_chain as wait_chain
from .retry import wait_combine as wait_combine
from .retry import wait_exponential as wait_exponential
from .retry import wait_exponential_jitter as wait_exponential_jitter
from .retry import wait_fixed as wait_fixed
from .retry import wait_full_jitter as wait_full_jitter
from .retry import wait_incrementing as wait_incrementing
from .retry import wait_none as wait_none
from .retry import wait_random as wait_random
from .retry import wait_random_exponential as wait_random_exponential
from .serialization import BaseSerializer as BaseSerializer
from .serialization import JsonPickleSerializer as JsonPickleSerializer
from .serialization import JsonSerializer as JsonSerializer
from .serialization import PickleSerializer as PickleSerializer
from .state import DictState as DictState
from .state import InMemoryStateStore as InMemoryStateStore
from .state import StateStore as StateStore
from .step import catch_error as catch_error
from .step import step as step
from .testing import WorkflowTestResult as WorkflowTestResult
from .testing import WorkflowTestRunner as WorkflowTestRunner
from .workflow import Workflow as Workflow

# Durable runs (the run stores, SQLite) and drawings load when one of their names is first used:
# a workflow that is only run needs neither, and they cost 36 ms beside 299 ms for the rest of
# `import batonflow.core` (medians of 6 in-process timings, `pip install .` in a fresh
# virtualenv; bench/startup.py). mypy reads the imports below; Python reads _LAZY.
if TYPE_CHECKING:
    from .checkpoints import Budget as Budget
    from .checkpoints import Checkpoint as Checkpoint
    from .checkpoints import CheckpointStore as CheckpointStore
    from .checkpoints import InMemoryCheckpointStore as InMemoryCheckpointStore
    from .checkpoints import RunRecord as RunRecord
    from .checkpoints import SqliteCheckpointStore as SqliteCheckpointStore
    from .checkpoints import WorkflowCheckpointer as WorkflowCheckpointer
    from .drawing import draw_agent_with_tools as draw_agent_with_tools
    from .drawing import draw_agent_with_tools_mermaid as draw_agent_with_tools_mermaid
    from .drawing import draw_agent_workflow as draw_agent_workflow
    from .drawing import draw_agent_workflow_mermaid as draw_agent_workflow_mermaid
    from .drawing import draw_all_possible_flows as draw_all_possible_flows
    from .drawing import draw_all_possible_flows_mermaid as draw_all_possible_flows_mermaid
    from .drawing import draw_most_recent_execution as draw_most_recent_execution
    from .drawing import draw_most_recent_execution_mermaid as draw_most_recent_execution_mermaid
    from .queue import RunLimits as RunLimits
    from .representation import WorkflowEventNode as WorkflowEventNode
    from .representation import WorkflowExternalNode as WorkflowExternalNode
    from .representation import WorkflowGenericNode as WorkflowGenericNode
    from .representation import WorkflowGraph as WorkflowGraph
    from .representation import WorkflowGraphEdge as WorkflowGraphEdge
    from .representation import WorkflowGraphNode as WorkflowGraphNode
    from .representation import WorkflowResourceConfigNode as WorkflowResourceConfigNode
    from .representation import WorkflowResourceNode as WorkflowResourceNode
    from .representation import WorkflowStepNode as WorkflowStepNode
    from .representation import get_workflow_representation as get_workflow_representation
    from .retention import Retention as Retention
    from .stores import open_store as open_store

_LAZY = {
    "Budget": "checkpoints",
    "Checkpoint": "checkpoints",
    "CheckpointStore": "checkpoints",
    "InMemoryCheckpointStore": "checkpoints",
    "RunRecord": "checkpoints",
    "SqliteCheckpointStore": "checkpoints",
    "WorkflowCheckpointer": "checkpoints",
    "draw_agent_with_tools": "drawing",
    "draw_agent_with_tools_mermaid": "drawing",
    "draw_agent_workflow": "drawing",
    "draw_agent_workflow_mermaid": "drawing",
    "draw_all_possible_flows": "drawing",
    "draw_all_possible_flows_mermaid": "drawing",
    "draw_most_recent_execution": "drawing",
    "draw_most_recent_execution_mermaid": "drawing",
    "WorkflowEventNode": "representation",
    "WorkflowExternalNode": "representation",
    "WorkflowGenericNode": "representation",
    "WorkflowGraph": "representation",
    "WorkflowGraphEdge": "representation",
    "WorkflowGraphNode": "representation",
    "WorkflowResourceConfigNode": "representation",
    "WorkflowResourceNode": "representation",
    "WorkflowStepNode": "representation",
    "get_workflow_representation": "representation",
    "open_store": "stores",
    "Retention": "retention",
    "RunLimits": "queue",
}


def _durable_on_first_use(workflow: Any, checkpoint_store: Any) -> Any:
    """``Workflow(checkpoint_store=...)`` before the durable room is loaded: load it (it plugs
    its own function into the engine's socket, replacing this one), then make it durable."""
    importlib.import_module(".durable.stores", __name__)
    return _make_durable(workflow, checkpoint_store)


# The durable room loads lazily (above), so the engine's socket gets a loader of it.
_plug_durability(_durable_on_first_use)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'batonflow.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "All",
    "AnyRetryPolicy",
    "BaseSerializer",
    "BatonflowError",
    "Budget",
    "BudgetExceededError",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "ChildRunEvent",
    "Collect",
    "CollectedEvents",
    "CollectionReleaseEvent",
    "ConstantDelayRetryPolicy",
    "Context",
    "ContextSerdeError",
    "ContextStateError",
    "DictState",
    "DuplicateStartError",
    "Event",
    "ExponentialBackoffRetryPolicy",
    "HumanResponseEvent",
    "IdempotencyKeyError",
    "IdleReleasedEvent",
    "InMemoryCheckpointStore",
    "InMemoryStateStore",
    "IncompatibleRunError",
    "InputRequiredEvent",
    "Instrument",
    "InternalDispatchEvent",
    "JoinedEvents",
    "JournalMismatchError",
    "JsonPickleSerializer",
    "JsonSerializer",
    "LeaseLostError",
    "PickleSerializer",
    "PrintingInstrument",
    "QueueFullError",
    "Resource",
    "ResourceConfig",
    "ResourceError",
    "ResourceManager",
    "Retention",
    "RetryCondition",
    "RetryInfo",
    "RetryPolicy",
    "RetryPolicyWithoutSeed",
    "RunBusyError",
    "RunConflictError",
    "RunLimits",
    "RunRecord",
    "SerializableEvent",
    "SerializableException",
    "SerializableOptionalEvent",
    "SerializableOptionalException",
    "SerializationError",
    "SqliteCheckpointStore",
    "StartEvent",
    "StartEventError",
    "StateError",
    "StateKeyError",
    "StateStore",
    "StateTypeError",
    "StateValidationError",
    "StepBoundary",
    "StepFailedEvent",
    "StepRestarted",
    "StepState",
    "StepStateChanged",
    "StepTimeoutError",
    "StopCondition",
    "StopEvent",
    "StoreCorruptError",
    "StoreFullError",
    "StoreLockedError",
    "StoreReadOnlyError",
    "StoreUnreachableError",
    "Take",
    "UnhandledEvent",
    "UnreconstructedException",
    "UnstorableTextError",
    "WaitStrategy",
    "Workflow",
    "WorkflowCancelledByUser",
    "WorkflowCancelledEvent",
    "WorkflowCheckpointer",
    "WorkflowConfigurationError",
    "WorkflowDone",
    "WorkflowEventNode",
    "WorkflowExternalNode",
    "WorkflowFailedEvent",
    "WorkflowGenericNode",
    "WorkflowGraph",
    "WorkflowGraphEdge",
    "WorkflowGraphNode",
    "WorkflowHandler",
    "WorkflowIdleEvent",
    "WorkflowResourceConfigNode",
    "WorkflowResourceNode",
    "WorkflowRuntimeError",
    "WorkflowStepDoesNotExistError",
    "WorkflowStepNode",
    "WorkflowTestResult",
    "WorkflowTestRunner",
    "WorkflowTimedOutEvent",
    "WorkflowTimeoutError",
    "WorkflowValidationError",
    "catch_error",
    "draw_agent_with_tools",
    "draw_agent_with_tools_mermaid",
    "draw_agent_workflow",
    "draw_agent_workflow_mermaid",
    "draw_all_possible_flows",
    "draw_all_possible_flows_mermaid",
    "draw_most_recent_execution",
    "draw_most_recent_execution_mermaid",
    "get_workflow_representation",
    "open_store",
    "retry_all",
    "retry_always",
    "retry_any",
    "retry_if_exception",
    "retry_if_exception_cause_type",
    "retry_if_exception_message",
    "retry_if_exception_type",
    "retry_if_not_exception_message",
    "retry_if_not_exception_type",
    "retry_never",
    "retry_policy",
    "retry_unless_exception_type",
    "step",
    "stop_after_attempt",
    "stop_after_delay",
    "stop_all",
    "stop_any",
    "stop_before_delay",
    "stop_never",
    "wait_chain",
    "wait_combine",
    "wait_exponential",
    "wait_exponential_jitter",
    "wait_fixed",
    "wait_full_jitter",
    "wait_incrementing",
    "wait_none",
    "wait_random",
    "wait_random_exponential",
]
