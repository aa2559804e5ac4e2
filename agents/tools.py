"""Tools: what an agent may call, and how a call's outcome is turned into text for the LLM.

An agent accepts llama-index-core tools (``FunctionTool``, ``QueryEngineTool``, any
``BaseTool``) and plain Python callables, sync or async. A callable becomes a ``FunctionTool``:
its name is the function's name, its description the signature and docstring, and its argument
schema comes from the signature (type hints, defaults, ``Annotated`` descriptions, and
``Args:`` lines of the docstring). Sync callables run in a worker thread so that several calls
in one turn run concurrently. A parameter annotated with batonflow's ``Context`` is hidden from
the LLM and receives the run's context, so a tool can read and write ``ctx.store``.

:func:`call_tool` never raises for the LLM's mistakes: an unknown tool, arguments that do not
fit the schema, and a tool that raises all come back as an error text the LLM is shown, so it
can correct itself.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from batonflow.core import Context
from llama_index.core.tools import BaseTool, FunctionTool, ToolOutput
from llama_index.core.tools.types import AsyncBaseTool, adapt_to_async_tool
from llama_index.core.tools.utils import create_schema_from_function
from pydantic import TypeAdapter, ValidationError

from .errors import AgentConfigurationError

#: What ``tools=`` accepts: a llama-index tool or a plain (sync or async) callable.
ToolLike: TypeAlias = BaseTool | Callable[..., Any]

# OpenAI's rule for function names; other providers accept a subset of it too.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The outcome of one tool call.

    Attributes:
        output: The text the LLM sees (the error text when the call failed).
        is_error: Whether the call failed.
        tool_output: The call's llama-index ``ToolOutput`` (``.raw_output``: what the tool
            returned).
        exception: The exception the tool raised, if it raised.
    """

    output: str
    is_error: bool
    tool_output: ToolOutput | None = None
    exception: BaseException | None = None

    def as_tool_output(self, name: str, kwargs: Mapping[str, Any]) -> ToolOutput:
        """The outcome as a ``ToolOutput`` (built for errors that never reached the tool)."""
        if self.tool_output is not None:
            return self.tool_output
        return ToolOutput(
            content=self.output,
            tool_name=name,
            raw_input=dict(kwargs),
            raw_output=self.output,
            is_error=self.is_error,
            exception=self.exception if isinstance(self.exception, Exception) else None,
        )


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def _google_arg_docs(doc: str) -> dict[str, str]:
    """Argument descriptions from a Google-style ``Args:`` section (``name: text`` lines)."""
    docs: dict[str, str] = {}
    lines = doc.splitlines()
    inside = False
    indent: int | None = None
    last: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            inside, indent, last = True, None, None
            continue
        if not inside:
            continue
        if not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if width == 0:
            break  # the next section (Returns:, Raises:, ...)
        match = _ARG_LINE.match(line)
        if match and (indent is None or width == indent):
            indent = width
            last = match.group(1).lstrip("*")
            docs[last] = match.group(2).strip()
        elif last is not None and indent is not None and width > indent:
            docs[last] += " " + line.strip()
    return docs


def _is_context(annotation: Any) -> bool:
    return annotation is Context or typing.get_origin(annotation) is Context


def context_parameter(fn: Callable[..., Any] | None) -> str | None:
    """The name of ``fn``'s parameter annotated with batonflow's ``Context``, if any."""
    if fn is None:
        return None
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: no context injection
        return None
    return next((name for name, hint in hints.items() if _is_context(hint)), None)


def _function_tool(fn: Callable[..., Any], name: str) -> FunctionTool:
    """A FunctionTool whose description shows real types and whose schema has arg docs.

    A parameter annotated with batonflow's ``Context`` is left out of the schema (the LLM never
    sees it); :func:`call_tool` passes the run's context there.
    """
    call = getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    target = call if not inspect.isroutine(fn) and inspect.iscoroutinefunction(call) else fn
    try:  # resolve string annotations (from __future__ import annotations) for the prompt
        signature = inspect.signature(target, eval_str=True)
    except (NameError, TypeError, ValueError):
        signature = inspect.signature(target)
    ctx_param = context_parameter(target)
    if ctx_param is not None:
        signature = signature.replace(
            parameters=[p for p in signature.parameters.values() if p.name != ctx_param]
        )
    doc = inspect.getdoc(target) or ""
    description = f"{name}{signature}\n{doc}".strip()
    arg_docs = {k: v for k, v in _google_arg_docs(doc).items() if k in signature.parameters}
    schema = create_schema_from_function(
        name,
        target,
        ignore_fields=[ctx_param] if ctx_param else None,
        param_descriptions=arg_docs or None,
    )
    if inspect.iscoroutinefunction(target):
        return FunctionTool.from_defaults(
            async_fn=target, name=name, description=description, fn_schema=schema
        )
    return FunctionTool.from_defaults(target, name=name, description=description, fn_schema=schema)


def to_tool(obj: ToolLike) -> AsyncBaseTool:
    """Turn a llama-index tool or a callable into an async llama-index tool.

    Args:
        obj: A ``BaseTool``, or a function / async function / callable object.

    Returns:
        An ``AsyncBaseTool`` (callables become ``FunctionTool``).

    Raises:
        AgentConfigurationError: ``obj`` is neither a tool nor callable, or its name is not
            usable as a tool name.
    """
    if isinstance(obj, BaseTool):
        tool = adapt_to_async_tool(obj)
    elif callable(obj):
        name = getattr(obj, "__name__", None)
        if not isinstance(name, str) or not _NAME.match(name):
            raise AgentConfigurationError(
                f"Cannot name the tool {obj!r}: tools need a name of letters, digits, '_' or "
                "'-'. Wrap it as FunctionTool.from_defaults(fn, name='my_tool') "
                "(from llama_index.core.tools import FunctionTool)."
            )
        tool = _function_tool(obj, name)
    else:
        raise AgentConfigurationError(
            f"tools= holds {obj!r} ({type(obj).__name__}), which is neither a llama-index tool "
            "nor callable. Pass functions (sync or async) or llama_index.core.tools.FunctionTool "
            "objects."
        )
    name = tool.metadata.name
    if not name or not _NAME.match(name):
        raise AgentConfigurationError(
            f"The tool name {name!r} is not usable: use 1-64 letters, digits, '_' or '-'. "
            "Give the tool a name, e.g. FunctionTool.from_defaults(fn, name='my_tool')."
        )
    return tool


def to_tools(objs: Iterable[ToolLike] | None) -> dict[str, AsyncBaseTool]:
    """Turn ``tools=`` into a name -> tool mapping, in the given order.

    Raises:
        AgentConfigurationError: a tool is not usable, or two tools share a name.
    """
    if objs is None:
        return {}
    if isinstance(objs, BaseTool) or callable(objs):
        raise AgentConfigurationError(
            "tools= takes a list of tools; wrap the single tool in a list: tools=[my_tool]."
        )
    tools: dict[str, AsyncBaseTool] = {}
    for obj in objs:
        tool = to_tool(obj)
        name = tool.metadata.get_name()
        if name in tools:
            raise AgentConfigurationError(
                f"Two tools are named {name!r}; tool names must be unique. Rename one, e.g. "
                "FunctionTool.from_defaults(fn, name='other_name')."
            )
        tools[name] = tool
    return tools


def tool_parameters(tool: BaseTool) -> dict[str, Any]:
    """The JSON schema of a tool's arguments."""
    return tool.metadata.get_parameters_dict()


def describe_tools(tools: Mapping[str, BaseTool]) -> str:
    """Describe tools for a text prompt: name, description and argument schema of each."""
    lines = []
    for name, tool in tools.items():
        schema = json.dumps(tool_parameters(tool).get("properties", {}), ensure_ascii=False)
        description = " ".join(tool.metadata.description.split())
        lines.append(f"- {name}: {description}\n  Arguments (JSON schema): {schema}")
    return "\n".join(lines)


def _check_arguments(tool: BaseTool, kwargs: Mapping[str, Any]) -> dict[str, Any] | str:
    """Validate arguments against the tool's schema: the kwargs to call with, or an error text.

    A value that already fits its annotation strictly is passed as the model sent it (``42``
    for a ``float`` parameter stays ``42``, as llama-index passes it); only values that need
    it are converted (``"3"`` for an ``int``, a dict for a pydantic model parameter).
    """
    schema = tool.metadata.fn_schema
    if schema is None:
        return dict(kwargs)
    name = tool.metadata.get_name()
    fields = schema.model_fields
    unknown = sorted(set(kwargs) - set(fields))
    if unknown and fields:
        return (
            f"Error: tool {name!r} has no argument(s) {', '.join(map(repr, unknown))}. "
            f"Its arguments are: {json.dumps(tool_parameters(tool).get('properties', {}))}."
        )
    try:
        model = schema.model_validate(dict(kwargs))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
            for err in exc.errors()
        )
        return (
            f"Error: bad arguments for tool {name!r}: {problems}. "
            f"Its arguments are: {json.dumps(tool_parameters(tool).get('properties', {}))}."
        )
    out = dict(kwargs)
    for key, value in kwargs.items():
        info = fields.get(key)
        if info is not None and not _fits_strictly(info.annotation, value):
            out[key] = getattr(model, key)
    return out


def _fits_strictly(annotation: Any, value: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value, strict=True)
    except (ValidationError, TypeError, ValueError):
        return False
    return True


async def call_tool(
    tools: Mapping[str, AsyncBaseTool],
    name: str,
    kwargs: Mapping[str, Any],
    ctx: Context | None = None,
) -> ToolOutcome:
    """Run one tool call and describe its outcome for the LLM; never raises for bad calls.

    Args:
        tools: The agent's tools by name.
        name: The tool the LLM asked for.
        kwargs: The arguments the LLM gave.
        ctx: The run's context, passed to a function tool's parameter annotated ``Context``.

    Returns:
        The tool's output as text, or an error text (unknown tool, bad arguments, the tool
        raised) with ``is_error=True``.
    """
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(tools) or "(none)"
        return ToolOutcome(
            f"Error: there is no tool named {name!r}. Available tools: {available}.", True
        )
    checked = _check_arguments(tool, kwargs)
    if isinstance(checked, str):
        return ToolOutcome(checked, True, exception=ToolArgumentsError(checked))
    if ctx is not None and isinstance(tool, FunctionTool):
        ctx_param = context_parameter(tool.real_fn)
        if ctx_param is not None:
            checked[ctx_param] = ctx
    try:
        output = await tool.acall(**checked)
    except Exception as exc:
        text = f"Error: tool {name!r} raised {type(exc).__name__}: {exc}"
        return ToolOutcome(
            text,
            True,
            ToolOutput(
                content=text,
                tool_name=name,
                raw_input=dict(kwargs),
                raw_output=str(exc),
                is_error=True,
                exception=exc,
            ),
            exc,
        )
    if not isinstance(output, ToolOutput):  # a custom tool that returns something else
        output = ToolOutput(
            content=str(output), tool_name=name, raw_input=dict(kwargs), raw_output=output
        )
    return ToolOutcome(str(output.content), bool(output.is_error), output)


class ToolArgumentsError(ValueError):
    """The LLM called a tool with arguments that do not fit its schema (shown to the LLM)."""


__all__ = [
    "ToolArgumentsError",
    "ToolLike",
    "ToolOutcome",
    "call_tool",
    "context_parameter",
    "describe_tools",
    "to_tool",
    "to_tools",
    "tool_parameters",
]
