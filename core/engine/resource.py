"""Resources: the heavy, unserializable things steps need (clients, indexes, memories).

A step asks for a resource with an ``Annotated`` parameter::

    def get_memory() -> Memory:
        return Memory.from_defaults("user_id_123", token_limit=60000)

    class MyFlow(Workflow):
        @step
        async def first(self, ev: StartEvent, memory: Annotated[Memory, Resource(get_memory)]):
            ...

The factory runs once per workflow instance and its result is shared by every step that names
the same factory (``cache=False`` makes a fresh object per injection). Factories may be sync or
async and may themselves take ``Annotated[..., Resource(...)]`` parameters. ``ResourceConfig``
loads a pydantic model from a JSON file instead of calling a factory.

Resources live in the :class:`ResourceManager` of the workflow instance, never in the state
store, so they are never serialized with a context or a checkpoint.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import typing
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .._public import publish
from ..errors import (
    ConfigFileNotFoundError,
    ResourceCycleError,
    ResourceError,
    ResourceFileNotFoundError,
    WorkflowConfigurationError,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True, eq=False)
class Resource(Generic[T]):
    """Marks a step parameter as a resource made by ``factory``.

    Used as ``Annotated[T, Resource(factory)]``. Two ``Resource`` markers with the same factory
    share one cached object.

    Args:
        factory: A sync or async callable returning the resource. Its own parameters annotated
            ``Annotated[..., Resource(...)]`` are injected too; it gets no other arguments.
        cache: ``True`` (default): call the factory once per workflow instance and share the
            result. ``False``: call it again for every injection.
    """

    factory: Callable[..., T | Awaitable[T]]
    cache: bool = True

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise TypeError(
                f"Resource() needs a callable factory, got {self.factory!r}; pass a function "
                "that returns the resource, e.g. Resource(make_client)."
            )

    @property
    def name(self) -> str:
        """The factory's qualified name, used in errors and drawings."""
        return _callable_name(self.factory)

    def dependencies(self) -> dict[str, ResourceParam]:
        """The factory's own resource parameters, by parameter name."""
        return resource_params(self.factory)


@dataclass(frozen=True, slots=True, eq=False)
class ResourceConfig:
    """Marks a step parameter as a pydantic model loaded from a JSON file.

    Used as ``Annotated[MyConfig, ResourceConfig("config.json", path_selector="llm")]``: the file
    is read, the value at the dotted ``path_selector`` (``None``: the whole file) is validated
    into ``MyConfig``. Loaded once per workflow instance and shared.

    Args:
        config_file: Path to a JSON file (relative paths start at the current directory).
        path_selector: Dotted path inside the file (``"models.chat"``; list items by index).
        label: A short name for drawings and errors (default: file and path).
        description: Free text for drawings.
    """

    config_file: str | os.PathLike[str]
    path_selector: str | None = None
    label: str | None = None
    description: str | None = None

    @property
    def cache(self) -> bool:
        """Configs are always loaded once and shared."""
        return True

    @property
    def name(self) -> str:
        """``label`` if given, else ``file`` or ``file:path``."""
        if self.label:
            return self.label
        where = os.fspath(self.config_file)
        return f"{where}:{self.path_selector}" if self.path_selector else where

    def load(self, annotation: Any) -> BaseModel:
        """Read the file, select the path and validate it into ``annotation``.

        Args:
            annotation: The pydantic model class the parameter is annotated with.

        Returns:
            The validated model instance.

        Raises:
            ConfigFileNotFoundError: The file does not exist (also a ``FileNotFoundError``).
            WorkflowConfigurationError: The annotation is not a pydantic model, the file is
                not JSON, the path is not in it, or the data does not validate.
        """
        model = _strip_annotated(annotation)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise WorkflowConfigurationError(
                f"ResourceConfig({self.name!r}) is annotated {model!r}, which is not a pydantic "
                "model; annotate the parameter with a BaseModel subclass."
            )
        path = Path(self.config_file)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigFileNotFoundError(
                f"No such file: {os.fspath(path)} (the config_file of "
                f"ResourceConfig({self.name!r})); create it or fix config_file."
            ) from exc
        except (OSError, ValueError) as exc:
            raise WorkflowConfigurationError(
                f"Config file {os.fspath(path)!r} of ResourceConfig({self.name!r}) is not "
                f"readable JSON ({exc}); fix the file."
            ) from exc
        for part in self.path_selector.split(".") if self.path_selector else ():
            if isinstance(data, dict) and part in data:
                data = data[part]
            elif (
                isinstance(data, list)
                and part.lstrip("-").isdigit()
                and -len(data) <= int(part) < len(data)
            ):
                data = data[int(part)]
            else:
                raise WorkflowConfigurationError(
                    f"Config file {os.fspath(path)!r} has no {part!r} on path "
                    f"{self.path_selector!r}; fix path_selector or the file."
                )
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise WorkflowConfigurationError(
                f"Config at {self.name!r} does not fit {model.__name__}: "
                f"{exc.error_count()} error(s), first: {_first_error(exc)}; fix the file."
            ) from exc


#: What may appear in ``Annotated[..., HERE]`` to request a resource.
ResourceDescriptor = Resource[Any] | ResourceConfig


@dataclass(frozen=True, slots=True)
class ResourceParam:
    """One resource parameter of a step or factory.

    Attributes:
        name: The parameter name.
        annotation: The declared type (the ``T`` of ``Annotated[T, ...]``).
        descriptor: The ``Resource`` or ``ResourceConfig`` marker.
    """

    name: str
    annotation: Any
    descriptor: ResourceDescriptor


def resource_params(
    fn: Callable[..., Any], localns: Mapping[str, Any] | None = None
) -> dict[str, ResourceParam]:
    """The parameters of ``fn`` annotated ``Annotated[T, Resource(...)]`` or ``ResourceConfig``.

    Reads annotations with ``typing.get_type_hints(include_extras=True)``, so string annotations
    (``from __future__ import annotations``) work. Names resolve in ``fn``'s own module first;
    ``localns`` (the names local to where the step using it was defined) only fills in names
    that module does not have, so a local class never shadows the factory's own types.

    Args:
        fn: A step function or a resource factory (a callable object's ``__call__`` is read).
        localns: Names of the scope that defined the step (a test or notebook function).

    Returns:
        The resource parameters by name, in signature order.
    """
    target: Any = fn
    if not (inspect.isfunction(target) or inspect.ismethod(target)) and callable(target):
        target = getattr(type(target), "__call__", target)  # noqa: B004
    local = _local_names(target, localns)
    try:
        hints = typing.get_type_hints(target, localns=local, include_extras=True)
    except Exception:
        hints = _hints_one_by_one(target, local)
    found: dict[str, ResourceParam] = {}
    for name, hint in hints.items():
        if name == "return" or typing.get_origin(hint) is not Annotated:
            continue
        base, *extras = typing.get_args(hint)
        for extra in extras:
            if isinstance(extra, Resource | ResourceConfig):
                found[name] = ResourceParam(name=name, annotation=base, descriptor=extra)
                break
    return found


#: Resources made for one step execution: a ``cache=False`` factory several of its resources
#: depend on runs once per execution, not once per dependency.
Scope = dict[Hashable, Any]


@dataclass(eq=False)
class ResourceManager:
    """Makes and caches the resources of one workflow instance.

    ``await manager.resolve(descriptor, step_name=..., param_name=..., annotation=...)`` returns
    the value to inject. Cached resources are keyed by factory identity (a ``ResourceConfig`` by
    file, path and model): concurrent first uses from several steps call the factory once and
    all get the same object. A failed factory is not cached, so a retried step calls it again.
    Within one step execution (one ``scope``), an uncached resource is made once even when
    several of the step's resources depend on it.
    """

    _values: dict[Hashable, Any] = field(default_factory=dict)
    _pending: dict[Hashable, asyncio.Future[Any]] = field(default_factory=dict)

    async def resolve(
        self,
        resource: ResourceDescriptor,
        *,
        step_name: str,
        param_name: str,
        annotation: Any = Any,
        localns: Mapping[str, Any] | None = None,
        scope: Scope | None = None,
    ) -> Any:
        """The value of ``resource`` for parameter ``param_name`` of step ``step_name``.

        Args:
            resource: The ``Resource`` or ``ResourceConfig`` marker.
            step_name: The step being injected (for error messages).
            param_name: The parameter being injected (for error messages).
            annotation: The parameter's declared type (a ``ResourceConfig`` validates into it).
            localns: Names local to where the step was defined, for factories' annotations.
            scope: Shared by the resolutions of one step execution (``None``: this call only).

        Returns:
            The (possibly cached) resource object.

        Raises:
            ResourceCycleError: Factories depend on each other in a circle.
            ResourceFileNotFoundError: A ``ResourceConfig`` file does not exist (yet).
            ResourceError: A factory (or one it depends on) raised, or a config is bad; names
                the resource, the step and the parameter, and chains the original error.
        """
        where = _Where(step_name, param_name, localns, {} if scope is None else scope)
        return await self._resolve(resource, annotation, where, ())

    async def resolve_all(
        self,
        params: Mapping[str, ResourceParam],
        *,
        step_name: str,
        localns: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Resolve every parameter of :func:`resource_params` for one step execution."""
        scope: Scope = {}
        return {
            name: await self._resolve(
                p.descriptor, p.annotation, _Where(step_name, name, localns, scope), ()
            )
            for name, p in params.items()
        }

    def cached(self) -> dict[str, Any]:
        """The cached resources made so far, by resource name (for inspection and tests)."""
        names: dict[str, Any] = {}
        for key, value in self._values.items():
            names[_key_name(key)] = value
        return names

    async def _resolve(
        self,
        resource: ResourceDescriptor,
        annotation: Any,
        where: _Where,
        chain: tuple[ResourceDescriptor, ...],
    ) -> Any:
        key = _cache_key(resource, annotation)
        if resource.cache and key in self._values:
            return self._values[key]
        if any(_cache_key(r, None) == _cache_key(resource, None) for r in chain):
            cycle = " -> ".join(r.name for r in (*chain, resource))
            raise ResourceCycleError(
                f"Circular resource dependency detected: {cycle} (injecting parameter "
                f"{where.param!r} of step {where.step!r}). Break the cycle so that no factory "
                "depends on itself."
            )
        if not resource.cache:
            if key in where.scope:
                return where.scope[key]
            value = await self._make(resource, annotation, where, chain)
            where.scope[key] = value
            return value
        loop = asyncio.get_running_loop()
        pending = self._pending.get(key)
        if pending is not None and pending.get_loop() is loop:
            try:
                return await asyncio.shield(pending)
            except Exception as exc:
                # The first caller's error names its own step; say where *this* one was.
                cause = exc.__cause__ if isinstance(exc, ResourceError) else exc
                if not isinstance(cause, Exception) or isinstance(exc, ResourceCycleError):
                    raise
                raise self._error(resource, where, chain, cause) from cause
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[key] = future
        try:
            value = await self._make(resource, annotation, where, chain)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters may not exist
            raise
        else:
            self._values[key] = value
            future.set_result(value)
            return value
        finally:
            if self._pending.get(key) is future:
                del self._pending[key]

    async def _make(
        self,
        resource: ResourceDescriptor,
        annotation: Any,
        where: _Where,
        chain: tuple[ResourceDescriptor, ...],
    ) -> Any:
        try:
            if isinstance(resource, ResourceConfig):
                return resource.load(annotation)
            kwargs = {
                name: await self._resolve(dep.descriptor, dep.annotation, where, (*chain, resource))
                for name, dep in resource_params(resource.factory, where.localns).items()
            }
            value = resource.factory(**kwargs)
            if inspect.isawaitable(value):
                value = await value
            return value
        except ResourceError:
            raise
        except Exception as exc:
            raise self._error(resource, where, chain, exc) from exc

    @staticmethod
    def _error(
        resource: ResourceDescriptor,
        where: _Where,
        chain: tuple[ResourceDescriptor, ...],
        exc: Exception,
    ) -> ResourceError:
        via = f" (needed by {' -> '.join(r.name for r in reversed(chain))})" if chain else ""
        if isinstance(resource, ResourceConfig) and isinstance(exc, FileNotFoundError):
            # Also a FileNotFoundError, as LlamaIndex raises; the file is read at every run.
            return ResourceFileNotFoundError(
                f"No such file: {os.fspath(resource.config_file)}, the config_file of "
                f"ResourceConfig({resource.name!r}){via} for parameter {where.param!r} of step "
                f"{where.step!r}. Create the file (it is read again at the next run) or fix "
                "config_file."
            )
        kind = "ResourceConfig" if isinstance(resource, ResourceConfig) else "Resource factory"
        return ResourceError(
            f"{kind} {resource.name!r}{via} failed while injecting parameter {where.param!r} of "
            f"step {where.step!r}: {type(exc).__name__}: {exc}. Fix the factory or its "
            "configuration; the original error is chained as __cause__."
        )


@dataclass(frozen=True, slots=True)
class _Where:
    """The step parameter a resolution is for, and what that resolution shares."""

    step: str
    param: str
    localns: Mapping[str, Any] | None
    scope: Scope


def nested_configs(
    resource: ResourceDescriptor, annotation: Any, localns: Mapping[str, Any] | None = None
) -> list[tuple[tuple[str, ...], ResourceConfig, Any]]:
    """Every ``ResourceConfig`` that resolving ``resource`` reads, without calling a factory.

    A factory whose annotations cannot be evaluated here is not walked (as in LlamaIndex):
    running the step reports that with the factory's name, and validation must not fail on
    what only the run can tell (names that exist once the step runs).

    Returns:
        ``(names of the factories on the way, the config, its annotation)`` per config, the
        direct one first; a factory seen twice (a cycle) is not walked again.
    """
    found: list[tuple[tuple[str, ...], ResourceConfig, Any]] = []
    seen: set[Hashable] = set()

    def walk(res: ResourceDescriptor, ann: Any, path: tuple[str, ...]) -> None:
        if isinstance(res, ResourceConfig):
            found.append((path, res, ann))
            return
        key = _cache_key(res, None)
        if key in seen:
            return
        seen.add(key)
        try:
            deps = resource_params(res.factory, localns)
        except WorkflowConfigurationError:
            return
        for dep in deps.values():
            walk(dep.descriptor, dep.annotation, (*path, res.name))

    walk(resource, annotation, ())
    return found


def _local_names(fn: Any, localns: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``localns`` without the names ``fn``'s module defines (those win, as Python would)."""
    if not localns:
        return None
    fn_globals = getattr(inspect.unwrap(fn), "__globals__", {})
    return {k: v for k, v in localns.items() if k not in fn_globals} or None


def _hints_one_by_one(fn: Any, localns: dict[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate annotations one at a time, so one unrelated bad name does not hide resources."""
    hints: dict[str, Any] = {}
    fn_globals = getattr(inspect.unwrap(fn), "__globals__", {})
    for name, hint in (getattr(fn, "__annotations__", None) or {}).items():
        if not isinstance(hint, str):
            hints[name] = hint
            continue
        try:
            hints[name] = eval(hint, fn_globals, localns)
        except Exception as exc:
            if "Resource" in hint:
                raise WorkflowConfigurationError(
                    f"Cannot evaluate the annotation {hint!r} of parameter {name!r} of "
                    f"{_callable_name(fn)} ({type(exc).__name__}: {exc}); define the names it "
                    "uses before the workflow class, or at module level."
                ) from exc
    return hints


def _cache_key(resource: ResourceDescriptor, annotation: Any) -> Hashable:
    if isinstance(resource, ResourceConfig):
        return (
            "config",
            os.fspath(resource.config_file),
            resource.path_selector,
            _hashable(annotation),
        )
    return ("factory", _hashable(resource.factory))


def _hashable(obj: Any) -> Hashable:
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))
    return typing.cast(Hashable, obj)


def _key_name(key: Hashable) -> str:
    if isinstance(key, tuple) and key and key[0] == "factory":
        return _callable_name(key[1])
    if isinstance(key, tuple) and key and key[0] == "config":
        return f"{key[1]}:{key[2]}" if key[2] else str(key[1])
    return repr(key)


def _callable_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else type(fn).__qualname__


def _strip_annotated(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
    return f"{loc}: {err.get('msg', '')}"


__all__ = [
    "Resource",
    "ResourceConfig",
    "ResourceDescriptor",
    "ResourceManager",
    "ResourceParam",
    "nested_configs",
    "resource_params",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
