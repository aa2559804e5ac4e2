"""batonflow.core: the event-driven workflow engine.

This module is the one public door: every public name of the engine is re-exported here and
listed in ``__all__``.
"""

from .checkpoints import Checkpoint as Checkpoint
from .checkpoints import CheckpointStore as CheckpointStore
from .checkpoints import InMemoryCheckpointStore as InMemoryCheckpointStore
from .checkpoints import RunRecord as RunRecord
from .checkpoints import SqliteCheckpointStore as SqliteCheckpointStore
from .checkpoints import WorkflowCheckpointer as WorkflowCheckpointer
from .collect import All as All
from .collect import Collect as Collect
from .collect import Take as Take
from .context import Context as Context
from .drawing import draw_all_possible_flows as draw_all_possible_flows
from .drawing import draw_all_possible_flows_mermaid as draw_all_possible_flows_mermaid
from .drawing import draw_most_recent_execution as draw_most_recent_execution
from .drawing import draw_most_recent_execution_mermaid as draw_most_recent_execution_mermaid
from .errors import BatonflowError as BatonflowError
from .errors import CheckpointError as CheckpointError
from .errors import ContextSerdeError as ContextSerdeError
from .errors import ContextStateError as ContextStateError
from .errors import ResourceError as ResourceError
from .errors import SerializationError as SerializationError
from .errors import StartEventError as StartEventError
from .errors import StateError as StateError
from .errors import StateKeyError as StateKeyError
from .errors import StateTypeError as StateTypeError
from .errors import StateValidationError as StateValidationError
from .errors import StepTimeoutError as StepTimeoutError
from .errors import WorkflowCancelledByUser as WorkflowCancelledByUser
from .errors import WorkflowConfigurationError as WorkflowConfigurationError
from .errors import WorkflowDone as WorkflowDone
from .errors import WorkflowRuntimeError as WorkflowRuntimeError
from .errors import WorkflowStepDoesNotExistError as WorkflowStepDoesNotExistError
from .errors import WorkflowTimeoutError as WorkflowTimeoutError
from .errors import WorkflowValidationError as WorkflowValidationError
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
from .resource import Resource as Resource
from .resource import ResourceConfig as ResourceConfig
from .resource import ResourceManager as ResourceManager
from .retry import ConstantDelayRetryPolicy as ConstantDelayRetryPolicy
from .retry import ExponentialBackoffRetryPolicy as ExponentialBackoffRetryPolicy
from .retry import RetryInfo as RetryInfo
from .retry import RetryPolicy as RetryPolicy
from .retry import retry_policy as retry_policy
from .serialization import BaseSerializer as BaseSerializer
from .serialization import JsonPickleSerializer as JsonPickleSerializer
from .serialization import JsonSerializer as JsonSerializer
from .serialization import PickleSerializer as PickleSerializer
from .state import DictState as DictState
from .state import InMemoryStateStore as InMemoryStateStore
from .state import StateStore as StateStore
from .step import catch_error as catch_error
from .step import step as step
from .workflow import Workflow as Workflow

__all__ = [
    "All",
    "BaseSerializer",
    "BatonflowError",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "Collect",
    "CollectedEvents",
    "CollectionReleaseEvent",
    "ConstantDelayRetryPolicy",
    "Context",
    "ContextSerdeError",
    "ContextStateError",
    "DictState",
    "Event",
    "ExponentialBackoffRetryPolicy",
    "HumanResponseEvent",
    "IdleReleasedEvent",
    "InMemoryCheckpointStore",
    "InMemoryStateStore",
    "InputRequiredEvent",
    "Instrument",
    "InternalDispatchEvent",
    "JoinedEvents",
    "JsonPickleSerializer",
    "JsonSerializer",
    "PickleSerializer",
    "PrintingInstrument",
    "Resource",
    "ResourceConfig",
    "ResourceError",
    "ResourceManager",
    "RetryInfo",
    "RetryPolicy",
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
    "StepState",
    "StepStateChanged",
    "StepTimeoutError",
    "StopEvent",
    "Take",
    "UnhandledEvent",
    "UnreconstructedException",
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
    "WorkflowTimedOutEvent",
    "WorkflowTimeoutError",
    "WorkflowValidationError",
    "catch_error",
    "draw_all_possible_flows",
    "draw_all_possible_flows_mermaid",
    "draw_most_recent_execution",
    "draw_most_recent_execution_mermaid",
    "get_workflow_representation",
    "retry_policy",
    "step",
]
