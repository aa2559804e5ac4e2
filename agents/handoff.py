"""The handoff tool of an AgentWorkflow, and the checks of its prompts.

An agent that may hand off is offered one more tool, ``handoff(to_agent, reason)``, marked
``return_direct``: its call ends the agent's turn. The workflow runs the call itself (it checks
the target against ``can_handoff_to`` and switches the current agent); a refused handoff comes
back to the LLM as an error result naming the agents it may pass to.
"""

from __future__ import annotations

from llama_index.core.tools import FunctionTool

from .errors import AgentConfigurationError
from .tools import ToolOutcome

#: The handoff tool's name.
HANDOFF_TOOL = "handoff"


def handoff(to_agent: str, reason: str) -> str:
    """Hand the conversation to ``to_agent``, saying why in ``reason``."""
    # No Args section: the parameters' schema is llama-index's (names and types, no text).
    # The workflow handles handoff calls itself (it checks the target and switches agents);
    # this body only gives the tool its schema and is never the one that runs.
    return f"{to_agent}: {reason}"


def handoff_tool(description: str) -> FunctionTool:
    """The handoff tool, described with the agents it may pass to."""
    return FunctionTool.from_defaults(
        fn=handoff, name=HANDOFF_TOOL, description=description, return_direct=True
    )


class HandoffError(ValueError):
    """An agent asked to hand off to an agent it may not hand off to (shown to the LLM)."""


def refused_handoff(from_agent: str, to_agent: str, targets: dict[str, str]) -> ToolOutcome:
    """The error result of a handoff to an agent that is not allowed (or does not exist)."""
    valid = ", ".join(targets) or "(none)"
    return ToolOutcome(
        f"Error: agent {from_agent!r} cannot hand off to {to_agent!r}. It may hand off to: "
        f"{valid}.",
        True,
        exception=HandoffError(f"no handoff from {from_agent!r} to {to_agent!r}"),
    )


def check_template(text: str, option: str, placeholders: tuple[str, ...]) -> str:
    """Check that a prompt option has its placeholders; returns it.

    Raises:
        AgentConfigurationError: a placeholder is missing.
    """
    missing = [p for p in placeholders if p not in text]
    if missing:
        raise AgentConfigurationError(
            f"{option}= must contain {' and '.join(placeholders)}; it has no "
            f"{', '.join(missing)}. Add the placeholder(s) to your prompt."
        )
    return text


__all__ = [
    "HANDOFF_TOOL",
    "HandoffError",
    "check_template",
    "handoff",
    "handoff_tool",
    "refused_handoff",
]
