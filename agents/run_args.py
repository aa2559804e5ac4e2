"""llama-index's ways of calling an agent's ``run()``, read into keyword arguments.

llama-index's agents (``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``, ``AgentWorkflow``)
take ``run(user_msg, chat_history, memory, ctx)`` positionally, or a workflow's
``run(ctx, start_event)``; the notebooks write ``agent.run("question", ctx=ctx)``. Every agent
class of batonflow reads its positional arguments with :func:`agent_run_kwargs`, so each of
those forms means the same on every class.
"""

from __future__ import annotations

from typing import Any

from batonflow.core import Context, StartEvent

#: The positional order of llama-index's agent ``run()``.
POSITIONAL = ("user_msg", "chat_history", "memory", "ctx")


def agent_run_kwargs(owner: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``run()``'s positional arguments as keywords, in llama-index's order.

    ``run(ctx)`` / ``run(ctx, start_event)`` (a :class:`~batonflow.core.Context` first) is the
    workflow's form; anything else first is the user's message, then ``chat_history``,
    ``memory`` and ``ctx``.

    Raises:
        TypeError: an argument is given both ways, or there are too many.
    """
    if not args:
        return dict(kwargs)
    names: tuple[str, ...] = ("ctx", "start_event") if isinstance(args[0], Context) else POSITIONAL
    if len(args) > len(names):
        raise TypeError(
            f"{owner}.run() takes at most {len(names)} positional arguments "
            f"({', '.join(names)}), got {len(args)}; pass the others by keyword."
        )
    out = dict(kwargs)
    for name, value in zip(names, args, strict=False):
        if name == "start_event" and not isinstance(value, StartEvent):
            raise TypeError(
                f"{owner}.run(ctx, start_event): the second argument must be a StartEvent, got "
                f"{type(value).__name__}; pass the user's message as run(user_msg=..., ctx=ctx)."
            )
        if name in out or (name == "user_msg" and "input" in out):
            raise TypeError(
                f"{owner}.run() got {name} both by position and by keyword; pass it once."
            )
        out[name] = value
    return out


__all__ = ["POSITIONAL", "agent_run_kwargs"]
