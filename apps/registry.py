"""Finding a workflow by name: the prebuilt flows, ``module:Name`` and ``file.py:Name``.

``load_workflow("guess-number")`` builds a prebuilt flow; ``load_workflow("pkg.mod:MyFlow")``
imports ``pkg.mod`` and instantiates ``MyFlow`` (a :class:`~batonflow.core.Workflow` subclass
with a constructor that needs no argument), or takes ``pkg.mod:flow`` when ``flow`` already is a
workflow instance, or calls it when it is a factory function; the current folder is importable
(as with ``python -m``). ``path/to/file.py:MyFlow`` loads a file that is not on the import path;
its folder is put on ``sys.path`` (as with ``python path/to/file.py``), so it can import the
modules next to it. Every failure is a :class:`FlowNotFoundError` whose message
names what was looked for and how to fix it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Settings


class FlowNotFoundError(LookupError):
    """A flow name or ``module:Name`` reference that does not lead to a workflow."""


class FlowSetupError(RuntimeError):
    """A prebuilt flow that cannot be built here (e.g. it needs an LLM and none is configured)."""


class LLMNotConfiguredError(FlowSetupError):
    """A prebuilt flow needs an LLM and no ``OPENAI_API_KEY`` is set."""


class BadParameterError(ValueError):
    """A ``--set key=value`` parameter that cannot be parsed."""


@dataclass(frozen=True, slots=True)
class PrebuiltFlow:
    """One flow the command line knows by name.

    ``check``, when given, is what ``batonflow run NAME`` checks before it builds the flow
    (which may import llama-index for seconds): a store that cannot work fails at once.
    """

    name: str
    summary: str
    build: Callable[[Settings], Any]
    example: str
    target: str
    check: Callable[[Settings], None] | None = None


def _llm(settings: Settings, flow: str) -> Any:
    """The LLM for flows that need one: OpenAI when ``OPENAI_API_KEY`` is set."""
    if not settings.openai_api_key:
        raise LLMNotConfiguredError(
            f"The {flow!r} flow needs an LLM and none is configured; set OPENAI_API_KEY "
            f"(model from BATONFLOW_MODEL, default {settings.model!r}), or build the flow in "
            "Python with llm=... and run it as module:instance."
        )
    from batonflow._extras import require_extra

    require_extra(
        f"The {flow!r} flow", "agents", {"llama_index.llms.openai": "llama-index-llms-openai"}
    )
    from llama_index.llms.openai import OpenAI

    return OpenAI(model=settings.model, api_key=settings.openai_api_key)


def _build_joke(settings: Settings) -> Any:
    llm = _llm(settings, "joke")  # no key: said before batonflow.agents loads llama-index
    from batonflow.agents import JokeFlow

    return JokeFlow(llm=llm)


def _calculator_tools() -> list[Callable[..., Any]]:
    def add(a: float, b: float) -> float:
        """Add two numbers and return the sum."""
        return a + b

    def multiply(a: float, b: float) -> float:
        """Multiply two numbers and return the product."""
        return a * b

    return [add, multiply]


def _build_react(settings: Settings) -> Any:
    llm = _llm(settings, "react")
    from batonflow.agents import ReActAgent

    return ReActAgent(tools=_calculator_tools(), llm=llm)


def _build_guess(settings: Settings) -> Any:
    from batonflow.agents import GuessNumberWorkflow

    return GuessNumberWorkflow(timeout=60)


def _build_accumulate(settings: Settings) -> Any:
    from batonflow.agents import AccumulateWorkflow

    return AccumulateWorkflow(timeout=60)


def _build_rag(settings: Settings) -> Any:
    from batonflow.rag import RAGWorkflow

    llm = _llm(settings, "rag") if settings.openai_api_key else None
    return RAGWorkflow(store=open_qdrant_store(settings), llm=llm)


def _build_hitl(settings: Settings) -> Any:
    from .examples.approval import ApprovalFlow

    return ApprovalFlow(timeout=None)


def _check_rag(settings: Settings) -> None:
    from .rag_cli import check_store

    check_store(settings, collection=True)


def open_qdrant_store(settings: Settings, collection: str | None = None) -> Any:
    """The Qdrant store of ``settings``: a server by URL, else the local folder."""
    from batonflow.rag import QdrantStore, StoreLockedError

    name = collection or settings.collection
    if settings.qdrant_url:
        return QdrantStore(url=settings.qdrant_url, collection=name)
    settings.qdrant_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return QdrantStore(path=str(settings.qdrant_path), collection=name)
    except StoreLockedError as exc:
        raise FlowSetupError(
            f"The local Qdrant folder {str(settings.qdrant_path)!r} is in use by another "
            "process (e.g. 'batonflow serve' or another 'batonflow rag' in this folder), and "
            "local Qdrant allows one at a time. Stop the other one, use another --qdrant-path "
            "(env BATONFLOW_QDRANT_PATH), or run a Qdrant server and pass --qdrant-url (env "
            "BATONFLOW_QDRANT_URL) to share it."
        ) from exc


PREBUILT: dict[str, PrebuiltFlow] = {
    flow.name: flow
    for flow in (
        PrebuiltFlow(
            "joke",
            "write a joke, then critique it (needs an LLM)",
            _build_joke,
            "--set topic=pirates",
            "batonflow.agents:JokeFlow",
        ),
        PrebuiltFlow(
            "react",
            "ReAct agent with add/multiply tools (needs an LLM)",
            _build_react,
            "--set input='What is 3 * (4 + 5)?'",
            "batonflow.agents:ReActAgent",
        ),
        PrebuiltFlow(
            "guess-number",
            "binary-search guessing loop",
            _build_guess,
            "--set target=42",
            "batonflow.agents:GuessNumberWorkflow",
        ),
        PrebuiltFlow(
            "accumulate",
            "sum numbers kept in the state store",
            _build_accumulate,
            "--set numbers='[1, 2, 3]'",
            "batonflow.agents:AccumulateWorkflow",
        ),
        PrebuiltFlow(
            "rag",
            "answer from the ingested documents",
            _build_rag,
            "--set query='What is batonflow?'",
            "batonflow.rag:RAGWorkflow",
            _check_rag,
        ),
        PrebuiltFlow(
            "hitl",
            "asks a human to approve a draft (human in the loop)",
            _build_hitl,
            "--set topic=release",
            "batonflow.apps.examples.approval:ApprovalFlow",
        ),
    )
}


def load_workflow_class(spec: str) -> Any:
    """Like :func:`load_workflow`, but a class is returned as is (drawing needs no instance).

    Prebuilt names give their class, so drawing ``joke`` needs no LLM.
    """
    if spec in PREBUILT:
        spec = PREBUILT[spec].target
    elif ":" not in spec:
        raise _unknown(spec)
    target = _resolve(spec)
    from batonflow.core import Workflow

    if inspect.isclass(target) and issubclass(target, Workflow):
        return target
    return _as_workflow(target, spec)


def load_workflow(spec: str, settings: Settings | None = None) -> Any:
    """Return the workflow instance that ``spec`` names.

    Args:
        spec: A prebuilt name (``guess-number``), ``module:Name`` or ``file.py:Name``.
        settings: Settings for prebuilt flows (LLM key, Qdrant location).

    Returns:
        A workflow instance, ready to ``run``.

    Raises:
        FlowNotFoundError: Nothing by that name, or it is not a workflow.
        FlowSetupError: A prebuilt flow that needs something not configured.
    """
    settings = settings or Settings.load()
    if spec in PREBUILT:
        return PREBUILT[spec].build(settings)
    if ":" not in spec:
        raise _unknown(spec)
    return _as_workflow(_resolve(spec), spec)


def _unknown(spec: str) -> FlowNotFoundError:
    return FlowNotFoundError(
        f"Unknown flow {spec!r}; use one of {', '.join(PREBUILT)} or module:WorkflowClass "
        "(e.g. mypkg.flows:MyFlow, or path/to/file.py:MyFlow)."
    )


def _resolve(spec: str) -> Any:
    """The object ``module:attr`` (or ``file.py:attr``) names."""
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise FlowNotFoundError(
            f"Flow reference {spec!r} is incomplete; write it as module:WorkflowClass."
        )
    module = _import(module_name, spec)
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise FlowNotFoundError(
                f"Module {module_name!r} has no attribute {attr!r}; check the name after the "
                f"colon in {spec!r}."
            )
        target = getattr(target, part)
    return target


def _import(module_name: str, spec: str) -> Any:
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        path = Path(module_name)
        if not path.is_file():
            raise FlowNotFoundError(
                f"File {str(path)!r} does not exist; check the path before the colon in {spec!r}."
            )
        # A stable name: restoring a snapshot in another process imports its event classes
        # by module name, and that process loads the same file under the same name.
        import hashlib  # not at the top: `batonflow --help` needs none of it

        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
        name = f"_batonflow_file_{path.stem}_{digest}"
        if name in sys.modules:
            return sys.modules[name]
        # Like `python path/to/file.py`: the file's folder is importable, so the file can
        # import its sibling modules (also later, from inside its steps).
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise FlowNotFoundError(f"File {str(path)!r} cannot be imported as Python.")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        loader_spec.loader.exec_module(module)
        return module
    _current_folder_importable()
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise FlowNotFoundError(
                f"Module {module_name!r} was not found; check the part before the colon in "
                f"{spec!r} and that it is importable (PYTHONPATH, current folder)."
            ) from exc
        raise


def _current_folder_importable() -> None:
    """Put the current folder on ``sys.path``, as ``python -m`` does (a console script does not).

    ``batonflow run mypkg.flows:MyFlow`` then finds ``mypkg`` in the folder it is run from.
    """
    cwd = os.getcwd()
    entries = {os.path.abspath(entry or os.curdir) for entry in sys.path}
    if cwd not in entries:
        sys.path.insert(0, cwd)
        importlib.invalidate_caches()


def _as_workflow(target: Any, spec: str) -> Any:
    from batonflow.core import Workflow

    if isinstance(target, Workflow):
        return target
    if inspect.isclass(target) and issubclass(target, Workflow):
        try:
            return target()
        except TypeError as exc:
            raise FlowNotFoundError(
                f"{spec} cannot be built without arguments ({exc}); expose a ready instance "
                "instead (flow = MyFlow(...)) and use module:flow."
            ) from exc
    if callable(target) and not inspect.isclass(target):
        made = target()
        if isinstance(made, Workflow):
            return made
    raise FlowNotFoundError(
        f"{spec} is not a Workflow (it is {_describe(target)}); point at a Workflow "
        "subclass, a Workflow instance or a function returning one."
    )


def _describe(target: Any) -> str:
    if inspect.isclass(target):
        return f"the class {target.__name__}"
    if callable(target):
        return f"a function returning {type(target()).__name__}"
    return f"a {type(target).__name__}"


#: The JSON schema type of each value ``json.loads`` gives.
_JSON_TYPES: tuple[tuple[type, tuple[str, ...]], ...] = (
    (bool, ("boolean",)),
    (int, ("integer", "number")),
    (float, ("number",)),
    (str, ("string",)),
    (list, ("array",)),
    (dict, ("object",)),
    (type(None), ("null",)),
)


def _schema_types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property of a start event's schema takes (``$ref`` ones are objects)."""
    options = prop.get("anyOf") or prop.get("oneOf") or [prop]
    types: set[str] = set()
    for option in options:
        kind = option.get("type")
        if isinstance(kind, list):
            types.update(kind)
        elif isinstance(kind, str):
            types.add(kind)
        elif "$ref" in option or "properties" in option:
            types.add("object")
        elif "enum" in option:
            types.update(_json_types(value)[0] for value in option["enum"])
    return types


def _json_types(value: Any) -> tuple[str, ...]:
    """The JSON schema types that take ``value`` (``3`` is an integer and a number)."""
    return next((ts for cls, ts in _JSON_TYPES if isinstance(value, cls)), ())


def text_where_expected(
    fields: dict[str, Any], items: Iterable[str], schema: dict[str, Any]
) -> dict[str, Any]:
    """``fields`` (from :func:`parse_sets`) with a value kept as the text it was written as
    where its field takes text but not the JSON value it parsed as.

    ``--set user_msg=42`` gives the text ``"42"`` to a ``str`` field (and to ``str |
    ChatMessage``), as ``--set user_msg=hello`` gives ``"hello"``; a field that takes a number
    still gets ``42``.

    Args:
        fields: The parsed ``--set`` values.
        items: The ``key=value`` strings they came from.
        schema: The JSON schema of the workflow's start event (``GET /workflows`` shows it).
    """
    texts = {key.strip(): raw for key, _, raw in (item.partition("=") for item in items)}
    props = schema.get("properties") or {}
    out = dict(fields)
    for key, value in fields.items():
        prop = props.get(key)
        if isinstance(value, str) or not isinstance(prop, dict) or key not in texts:
            continue
        types = _schema_types(prop)
        if "string" in types and not types.intersection(_json_types(value)):
            out[key] = texts[key]
    return out


def parse_sets(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``key=value`` strings: JSON values when they parse, else plain strings.

    ``["n=3", "names=[\\"a\\"]", "topic=pirates", "x=null"]`` gives
    ``{"n": 3, "names": ["a"], "topic": "pirates", "x": None}``. A later key wins.

    Raises:
        BadParameterError: An item without ``=`` or with an empty or non-identifier key.
    """
    values: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise BadParameterError(
                f"--set expects key=value, got {item!r}; write --set {item or 'key'}=VALUE."
            )
        if not key.isidentifier():
            raise BadParameterError(
                f"--set key {key!r} in {item!r} is not a valid field name; use letters, digits "
                "and underscores (e.g. --set topic=pirates)."
            )
        try:
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


__all__ = [
    "PREBUILT",
    "BadParameterError",
    "FlowNotFoundError",
    "FlowSetupError",
    "LLMNotConfiguredError",
    "PrebuiltFlow",
    "load_workflow",
    "load_workflow_class",
    "open_qdrant_store",
    "parse_sets",
    "text_where_expected",
]
