"""batonflow.agents: ready-made agent flows on the batonflow engine.

Every flow is a plain :class:`batonflow.core.Workflow` subclass: read its steps, subclass it and
override one, draw it. Every LLM is a llama-index-core ``LLM`` passed as ``llm=`` (default:
OpenAI ``gpt-4o-mini``, which needs ``OPENAI_API_KEY``); :mod:`batonflow.agents.testing` has an
offline scripted LLM.

* :class:`JokeFlow` — write a joke about ``topic``, then critique it.
* :class:`ReActAgent` — Thought / Action / Observation loop over tools, with any LLM.
* :class:`FunctionCallingAgent` — the same contract with the LLM's native tool calls. Run
  alone, both return an :class:`AgentResult`, with the same memory (``run(memory=...)``,
  token-limited by default) and structured output (``output_cls=``) as the agents below.
* :class:`AgentWorkflow`, :class:`FunctionAgent`, :class:`CodeActAgent` — llama-index's agent
  names and shapes: several agents with handoffs, structured output (``output_cls=``),
  llama-index memory, ``return_direct`` tools; the run's result is an :class:`AgentOutput`.
* :class:`GuessNumberWorkflow`, :class:`AccumulateWorkflow` — loops and shared state.

Needs the ``agents`` extra: ``pip install 'batonflow[agents]'``.
"""

from __future__ import annotations

from importlib.util import find_spec

from .errors import MissingDependencyError

# Checked without importing it: llama-index takes seconds to import, and the flows that need
# no LLM (guess-number, accumulate) must start fast; the modules that use it import it.
try:
    _llama_index = find_spec("llama_index.core")
except ImportError:  # a parent package is missing
    _llama_index = None
if _llama_index is None:
    raise MissingDependencyError(
        "batonflow.agents needs llama-index-core, which is not installed. Install the agents "
        "extra: pip install 'batonflow[agents]'"
    )

from typing import TYPE_CHECKING, Any

from .errors import AgentConfigurationError as AgentConfigurationError
from .errors import AgentError as AgentError
from .errors import AgentInputError as AgentInputError
from .errors import LLMCallError as LLMCallError
from .errors import LLMConfigurationError as LLMConfigurationError
from .errors import MaxIterationsError as MaxIterationsError
from .results import AgentResult as AgentResult
from .results import ToolCallRecord as ToolCallRecord

if TYPE_CHECKING:
    from .accumulate import AccumulateStart as AccumulateStart
    from .accumulate import AccumulateWorkflow as AccumulateWorkflow
    from .accumulate import NumberAdded as NumberAdded
    from .accumulate import NumberEvent as NumberEvent
    from .chat_memory import ChatMemory as ChatMemory
    from .codeact import CodeActAgent as CodeActAgent
    from .events import AgentInput as AgentInput
    from .events import AgentOutput as AgentOutput
    from .events import AgentSetup as AgentSetup
    from .events import AgentStart as AgentStart
    from .events import AgentStream as AgentStream
    from .events import AgentStreamStructuredOutput as AgentStreamStructuredOutput
    from .events import LLMInputEvent as LLMInputEvent
    from .events import PrepareEvent as PrepareEvent
    from .events import PydanticConversionWarning as PydanticConversionWarning
    from .events import RunToolEvent as RunToolEvent
    from .events import ToolCall as ToolCall
    from .events import ToolCallResult as ToolCallResult
    from .events import ToolResultEvent as ToolResultEvent
    from .function_agent import BaseWorkflowAgent as BaseWorkflowAgent
    from .function_agent import FunctionAgent as FunctionAgent
    from .function_agent import WorkflowAgent as WorkflowAgent
    from .function_calling import FunctionCallingAgent as FunctionCallingAgent
    from .guess_number import GuessChecked as GuessChecked
    from .guess_number import GuessEvent as GuessEvent
    from .guess_number import GuessNumberStart as GuessNumberStart
    from .guess_number import GuessNumberWorkflow as GuessNumberWorkflow
    from .joke import JokeEvent as JokeEvent
    from .joke import JokeFlow as JokeFlow
    from .joke import JokeStart as JokeStart
    from .react import ReActAgent as ReActAgent
    from .structured import StructuredOutputWarning as StructuredOutputWarning
    from .workflow import AgentWorkflow as AgentWorkflow
    from .workflow import AgentWorkflowStartEvent as AgentWorkflowStartEvent

# The flows load on first use: `import batonflow.agents` stays cheap, and the flows' modules
# import the engine only when a flow is asked for.
_FLOWS = {
    # the agents' events import llama-index's chat types
    **dict.fromkeys(
        [
            "AgentInput",
            "AgentOutput",
            "AgentSetup",
            "AgentStart",
            "AgentStream",
            "AgentStreamStructuredOutput",
            "LLMInputEvent",
            "PrepareEvent",
            "PydanticConversionWarning",
            "RunToolEvent",
            "ToolCall",
            "ToolCallResult",
            "ToolResultEvent",
        ],
        "events",
    ),
    "AccumulateStart": "accumulate",
    "AccumulateWorkflow": "accumulate",
    "NumberAdded": "accumulate",
    "NumberEvent": "accumulate",
    "AgentWorkflow": "workflow",
    "AgentWorkflowStartEvent": "workflow",
    "ChatMemory": "chat_memory",
    "CodeActAgent": "codeact",
    "BaseWorkflowAgent": "function_agent",
    "FunctionAgent": "function_agent",
    "FunctionCallingAgent": "function_calling",
    "StructuredOutputWarning": "structured",
    "WorkflowAgent": "function_agent",
    "GuessChecked": "guess_number",
    "GuessEvent": "guess_number",
    "GuessNumberStart": "guess_number",
    "GuessNumberWorkflow": "guess_number",
    "JokeEvent": "joke",
    "JokeFlow": "joke",
    "JokeStart": "joke",
    "ReActAgent": "react",
}


def __getattr__(name: str) -> Any:
    module = _FLOWS.get(name)
    if module is None:
        raise AttributeError(f"module 'batonflow.agents' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AccumulateStart",
    "AccumulateWorkflow",
    "AgentConfigurationError",
    "AgentError",
    "AgentInput",
    "AgentInputError",
    "AgentOutput",
    "AgentResult",
    "AgentSetup",
    "AgentStart",
    "AgentStream",
    "AgentStreamStructuredOutput",
    "AgentWorkflow",
    "AgentWorkflowStartEvent",
    "BaseWorkflowAgent",
    "ChatMemory",
    "CodeActAgent",
    "FunctionAgent",
    "FunctionCallingAgent",
    "GuessChecked",
    "GuessEvent",
    "GuessNumberStart",
    "GuessNumberWorkflow",
    "JokeEvent",
    "JokeFlow",
    "JokeStart",
    "LLMCallError",
    "LLMConfigurationError",
    "LLMInputEvent",
    "MaxIterationsError",
    "NumberAdded",
    "NumberEvent",
    "PrepareEvent",
    "PydanticConversionWarning",
    "ReActAgent",
    "RunToolEvent",
    "StructuredOutputWarning",
    "ToolCall",
    "ToolCallRecord",
    "ToolCallResult",
    "ToolResultEvent",
    "WorkflowAgent",
]
