"""The prompts of the agent flows, as plain strings a user can read and replace.

:data:`REACT_SYSTEM_PROMPT` is formatted with ``{tool_descriptions}`` and ``{tool_names}``;
pass your own (with the same placeholders) as ``ReActAgent(react_prompt=...)``. The joke
prompts are formatted with ``{topic}`` and ``{joke}``.
"""

from __future__ import annotations

from collections.abc import Mapping

from llama_index.core.tools import BaseTool

from .tools import describe_tools

JOKE_PROMPT = "Write your best joke about {topic}."
CRITIQUE_PROMPT = "Give a thorough analysis and critique of the following joke: {joke}"

REACT_SYSTEM_PROMPT = """\
You answer the user's question. You may use these tools:

{tool_descriptions}

Work in turns. In each turn write exactly this format:

Thought: what you know so far and what to do next.
Action: the tool to use, one of [{tool_names}]
Action Input: the tool's arguments as a JSON object, e.g. {{"a": 1, "b": 2}}

You may write several Action / Action Input pairs after one Thought when the calls do not
depend on each other; they run at the same time. Then stop: the results come back to you as
"Observation:" lines in the next message. Never write an Observation yourself.

When you can answer without more tools, write:

Thought: I can answer without using any more tools.
Answer: your answer, in the language of the user's question.
"""

NO_TOOLS_DESCRIPTION = "(no tools: answer directly)"

# The next four are the texts llama-index's agents show the LLM, word for word: a prompt is
# behaviour (the LLM answers what it is shown), so a port must show the same text.

#: The handoff tool's description, formatted with ``{agent_info}`` (the agents it may pass to,
#: as a ``{name: description}`` dict).
HANDOFF_PROMPT = """Useful for handing off to another agent.
If you are currently not equipped to handle the user's request, or another agent is better \
suited to handle the request, please hand off to the appropriate agent.

Currently available agents:
{agent_info}
"""

#: What the handoff tool returns, formatted with ``{to_agent}`` and ``{reason}``.
HANDOFF_OUTPUT_PROMPT = (
    "Agent {to_agent} is now handling the request due to the following reason: {reason}."
    "\nPlease continue with the current request."
)

#: How the shared state is shown with the user's message: ``{state}`` and ``{msg}``.
STATE_PROMPT = """Current state:
{state}

Current message:
{msg}
"""

#: The last call's instruction when max_iterations is reached with early_stopping="generate".
EARLY_STOPPING_PROMPT = """\
You have reached the maximum number of iterations ({max_iterations}).
Based on the information gathered so far, please provide a helpful final response to the \
user's original query.
Do not attempt to use any more tools. Simply summarize what you have learned and provide the \
best possible answer."""


def react_system_prompt(
    tools: Mapping[str, BaseTool],
    *,
    template: str = REACT_SYSTEM_PROMPT,
    system_prompt: str | None = None,
) -> str:
    """Build the ReAct system message: the user's system prompt, then the ReAct instructions.

    Args:
        tools: The agent's tools by name.
        template: The ReAct instructions, with ``{tool_descriptions}`` (or llama-index's
            ``{tool_desc}``) and ``{tool_names}``.
        system_prompt: Extra instructions (persona, rules) put before the ReAct instructions.

    Returns:
        The system message text.
    """
    described = describe_tools(tools) if tools else NO_TOOLS_DESCRIPTION
    body = template.format(
        tool_descriptions=described, tool_desc=described, tool_names=", ".join(tools)
    )
    return f"{system_prompt.strip()}\n\n{body}" if system_prompt else body


def observation_message(observations: list[tuple[str, str]]) -> str:
    """The message that gives the LLM the outcome of its actions, in the order it asked.

    Args:
        observations: ``(tool_name, output)`` per action of the turn.
    """
    if len(observations) == 1:
        return f"Observation: {observations[0][1]}"
    return "\n".join(
        f"Observation {i} ({name}): {output}"
        for i, (name, output) in enumerate(observations, start=1)
    )


__all__ = [
    "CRITIQUE_PROMPT",
    "EARLY_STOPPING_PROMPT",
    "HANDOFF_OUTPUT_PROMPT",
    "HANDOFF_PROMPT",
    "JOKE_PROMPT",
    "REACT_SYSTEM_PROMPT",
    "STATE_PROMPT",
    "observation_message",
    "react_system_prompt",
]
