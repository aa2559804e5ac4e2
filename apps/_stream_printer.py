"""How ``batonflow run --stream`` shows a run's stream to a person, agents' runs included.

A workflow's events are printed one line each (``TypeName {fields}``). An agent's events
(:mod:`batonflow.agents.events`) are printed as what they mean:

* the LLM's text as it streams, one growing line per LLM turn (``AgentStream`` deltas are
  written as they come, not one line per token);
* a tool call as ``→ add(a=2, b=3)`` and its result as ``← add: 5`` (``← add failed: ...``),
  each on one line of at most :data:`LINE_LIMIT` characters;
* a handoff as ``[writer] takes over`` when the answering agent changes;
* the LLM's input (``AgentInput``, ``AgentSetup``) not at all: it repeats the conversation.

The printer reads events in their wire form (``{"type", "qualified_name", "value"}``), so the
local run and ``--server`` print alike. It also keeps :attr:`StreamPrinter.answer`, the text of
the run's final ``AgentOutput``: the command prints that as the result of an agent's run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

#: Where batonflow's agent events are defined (their ``qualified_name`` starts with it).
AGENT_EVENTS = "batonflow.agents.events."
#: How much of a tool's arguments or output a line shows.
LINE_LIMIT = 300
#: Agent events that only repeat what the LLM is sent.
_SILENT = frozenset({"AgentInput", "AgentSetup"})


def message_text(message: Any) -> str:
    """The text of a ``ChatMessage`` in its JSON form (its text blocks, or ``content``)."""
    if isinstance(message, str):
        return message
    if not isinstance(message, dict):
        return ""
    blocks = message.get("blocks")
    if isinstance(blocks, list):
        return "".join(
            str(b.get("text", "")) for b in blocks if isinstance(b, dict) and "text" in b
        )
    content = message.get("content")
    return content if isinstance(content, str) else ""


def tool_output_text(output: Any) -> str:
    """What a tool returned, as its ``ToolOutput`` JSON shows it to the LLM."""
    if not isinstance(output, dict):
        return "" if output is None else str(output)
    text = message_text(output)
    if text:
        return text
    raw = output.get("raw_output")
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


def _one_line(text: str) -> str:
    """``text`` on one line, cut at :data:`LINE_LIMIT` characters."""
    text = " ".join(text.split())
    return text if len(text) <= LINE_LIMIT else text[: LINE_LIMIT - 1] + "…"


def _arguments(kwargs: Any) -> str:
    if not isinstance(kwargs, dict):
        return ""
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in kwargs.items())


class StreamPrinter:
    """Prints a run's stream for people (``show``) and keeps its final answer (``answer``).

    Args:
        console: Where to print (the command's stderr: stdout keeps the result alone).
        echo: Print the events; ``False`` only keeps the answer.
    """

    def __init__(self, console: Console, *, echo: bool = True) -> None:
        self.console = console
        self.echo = echo
        #: The text of the final ``AgentOutput`` seen, ``None`` when the run is no agent's.
        self.answer: str | None = None
        #: Whether the final answer was printed as it streamed.
        self.answer_streamed = False
        self._agent: str | None = None
        self._line = ""  # the text of the growing line (empty: no line open)

    def wants(self, type_name: str) -> bool:
        """Whether :meth:`show` needs events of this type (all when echoing, else outputs)."""
        return self.echo or type_name == "AgentOutput"

    def show(self, type_name: str, qualified_name: str, value: Any) -> None:
        """Print one event of the stream (and note the answer when it is a final output)."""
        value = value if isinstance(value, dict) else {}
        if not qualified_name.startswith(AGENT_EVENTS):
            self._event_line(type_name, value)
            return
        agent = value.get("current_agent_name")
        if isinstance(agent, str) and type_name not in _SILENT:
            if self._agent is not None and agent != self._agent:
                self._write_line(f"[{agent}] takes over")
            self._agent = agent
        if type_name == "AgentStream":
            self._grow(str(value.get("delta") or ""))
        elif type_name == "AgentOutput":
            self._turn_ended(value)
        elif type_name == "ToolCall":
            arguments = _one_line(_arguments(value.get("tool_kwargs")))
            self._write_line(f"→ {value.get('tool_name')}({arguments})")
        elif type_name == "ToolCallResult":
            output = value.get("tool_output")
            failed = isinstance(output, dict) and output.get("is_error")
            verb = "failed: " if failed else ""
            text = _one_line(tool_output_text(output))
            self._write_line(f"← {value.get('tool_name')}: {verb}{text}")
        elif type_name == "AgentStreamStructuredOutput":
            output = json.dumps(value.get("output"), ensure_ascii=False)
            self._write_line(f"structured output: {output}")
        elif type_name not in _SILENT:
            self._event_line(type_name, value)

    def close(self) -> None:
        """End the growing line, if one is open."""
        if self._line:
            self._emit("\n")
            self._line = ""

    def _turn_ended(self, value: dict[str, Any]) -> None:
        text = message_text(value.get("response"))
        streamed = self._line
        if text and not streamed:
            # The LLM did not stream (streaming=False): its text comes whole.
            self._grow(text)
        self.close()
        if value.get("is_final"):
            self.answer = text
            self.answer_streamed = self.echo and bool(text)

    def _grow(self, delta: str) -> None:
        if delta:
            self._line += delta
            self._emit(delta)

    def _event_line(self, type_name: str, value: dict[str, Any]) -> None:
        self.close()
        if self.echo:
            self.console.print(f"[cyan]{escape(type_name)}[/] {escape(str(value))}", emoji=False)

    def _write_line(self, text: str) -> None:
        self.close()
        if self.echo:
            self.console.print(text, markup=False, emoji=False)

    def _emit(self, text: str) -> None:
        # The growing line is written as it comes: rich would end each print with a newline.
        if self.echo:
            self.console.file.write(text)
            self.console.file.flush()


def event_lines(entries: list[dict[str, Any]]) -> list[str]:
    """A run's recorded events as ``runs show --events`` lists them, one line each, except
    that consecutive ``AgentStream`` events of one agent make one line: the seqs they span,
    how many they are, and the text they streamed (``#12-18 AgentStream × 7: The Moon...``).

    Args:
        entries: The events as the run store and the server keep them (``{"seq", "type",
            "qualified_name", "value"}``; the run's end as ``{"seq", "status", ...}``).
    """
    lines: list[str] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if run:
            first, last = run[0], run[-1]
            text = _one_line(str(last.get("value", {}).get("response", "")))
            span = f"{first['seq']}-{last['seq']}" if len(run) > 1 else f"{first['seq']}"
            lines.append(f"  #{span} AgentStream × {len(run)}: {text}")
            run.clear()

    for entry in entries:
        value = entry.get("value") if isinstance(entry.get("value"), dict) else {}
        streamed = entry.get("type") == "AgentStream" and str(
            entry.get("qualified_name", "")
        ).startswith(AGENT_EVENTS)
        same_agent = not run or run[-1]["value"].get("current_agent_name") == value.get(
            "current_agent_name"
        )
        if not (streamed and same_agent):
            flush()
        if streamed:
            run.append({**entry, "value": value})
            continue
        label = entry.get("type") or f"end ({entry.get('status')})"
        lines.append(f"  #{entry['seq']} {label} {entry.get('value', '')}")
    flush()
    return lines


__all__ = ["AGENT_EVENTS", "StreamPrinter", "event_lines", "message_text", "tool_output_text"]
