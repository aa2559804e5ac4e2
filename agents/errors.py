"""The errors the prebuilt agent flows raise.

They extend the engine's hierarchy (:mod:`batonflow.core.errors`); run-time ones are also
``WorkflowRuntimeError`` (and so ``RuntimeError``), so code that catches engine errors keeps
working::

    BatonflowError
    ├── AgentError                                  base of every error below
    │   ├── MissingDependencyError (ImportError)    llama-index is not installed
    │   ├── AgentConfigurationError (ValueError)    a bad llm=, tools= or option
    │   │   └── LLMConfigurationError               no llm= and no OPENAI_API_KEY
    │   ├── AgentInputError (ValueError)            run() without a user message
    │   ├── LLMCallError (WorkflowRuntimeError)     the LLM API call failed (429, 500, ...)
    │   └── MaxIterationsError (WorkflowRuntimeError)  no final answer within max_iterations
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batonflow.core.errors import BatonflowError, WorkflowRuntimeError

if TYPE_CHECKING:
    from .results import AgentResult


class AgentError(BatonflowError):
    """Base class of the errors raised by :mod:`batonflow.agents`."""


class MissingDependencyError(AgentError, ImportError):
    """An optional dependency of the agents extra is not installed."""


class AgentConfigurationError(AgentError, ValueError):
    """An agent was built with an option that cannot work (bad ``llm=``, ``tools=``, ...)."""


class LLMConfigurationError(AgentConfigurationError):
    """No ``llm=`` was given and the default LLM cannot be built (no ``OPENAI_API_KEY``)."""


class AgentInputError(AgentError, ValueError):
    """A run was started without what the agent needs (e.g. no ``input=``)."""


class LLMCallError(AgentError, WorkflowRuntimeError):
    """The LLM API call failed; the original exception is ``__cause__``.

    Attributes:
        status_code: The HTTP status of the failed call when the client reported one
            (429 rate limit, 500 server error, ...), else ``None``.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep the keyword attributes when the error is pickled (process pools, stores).
        return (type(self), (str(self),), self.__dict__)


class MaxIterationsError(AgentError, WorkflowRuntimeError):
    """The agent reached ``max_iterations`` LLM calls without a final answer.

    Attributes:
        result: What the agent did before it stopped: the tool calls it made and its reasoning
            (``result.response`` is empty).
    """

    def __init__(self, message: str, *, result: AgentResult | None = None) -> None:
        super().__init__(message)
        self.result = result

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self),), self.__dict__)


__all__ = [
    "AgentConfigurationError",
    "AgentError",
    "AgentInputError",
    "LLMCallError",
    "LLMConfigurationError",
    "MaxIterationsError",
    "MissingDependencyError",
]
