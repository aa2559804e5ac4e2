"""Which classes a snapshot restores by name in a new process, and which it refuses.

Each test writes its workflow as a real module file, takes a snapshot, then makes this process
forget everything it learnt about that module's classes (as a new process would start), and
restores the snapshot. ``test_trusted_types_crash.py`` does the same across real processes.
"""

from __future__ import annotations

import enum
import importlib
import json
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from batonflow.core import Context, Workflow
from batonflow.core.data._type_registry import KNOWN, REGISTERED, TRUSTED_MODULES
from batonflow.core.errors import ContextSerdeError
from batonflow.core.serialization import JsonSerializer, register_type
from pydantic import BaseModel

FLOW = """
from typing import Any

from pydantic import BaseModel

from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
{imports}


class Item(BaseModel):
    name: str
    qty: int = 1


class Part(BaseModel):
    label: str


class Book(BaseModel):
    parts: list[Part] = []
    extra: dict[str, Any] = {{}}


class Ping(Event):
    payload: Any = None


class Flow(Workflow):
    @step
    async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
{body}
        return StopEvent(result="ok")


class TypedFlow(Workflow):
    @step
    async def only(self, ctx: Context[Book], ev: StartEvent) -> StopEvent:
        await ctx.store.set("parts", [Part(label="cover")])
        await ctx.store.set("extra", {{"note": Item(name="loose")}})
        return StopEvent(result="ok")
"""

Make = Callable[..., ModuleType]


@pytest.fixture
def make_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Make]:
    """Write a module file with a fresh name and import it (unless ``load=False``)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def make(source: str, *, prefix: str = "bf_flow", load: bool = True) -> Any:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        importlib.invalidate_caches()
        return importlib.import_module(name) if load else name

    yield make
    for name in names:
        sys.modules.pop(name, None)
        TRUSTED_MODULES.discard(name)


def flow_module(make: Make, body: str = "        pass", imports: str = "") -> ModuleType:
    """A module holding the workflows of ``FLOW``, ``body`` being the untyped step's code."""
    return make(FLOW.format(body=textwrap.indent(textwrap.dedent(body), " " * 8), imports=imports))


def forget(module: ModuleType) -> None:
    """Drop what this process learnt about ``module``'s classes, as a new process starts."""
    prefix = f"{module.__name__}:"
    for name in [n for n in list(KNOWN) if n.startswith(prefix)]:
        del KNOWN[name]
    TRUSTED_MODULES.discard(module.__name__)
    for obj in vars(module).values():
        if isinstance(obj, type):
            REGISTERED.discard(obj)
            if issubclass(obj, Workflow) and obj.__module__ == module.__name__:
                obj._class_graph().registered = False


async def snapshot(workflow: Workflow) -> dict[str, Any]:
    """Run ``workflow`` and return its context as JSON text would bring it back."""
    handler = workflow.run()
    await handler
    return json.loads(json.dumps(handler.ctx.to_dict()))


def model_tree(type_name: str, fields: dict[str, Any] | None = None) -> str:
    """The serialized text of a model of class ``type_name``."""
    return json.dumps({"__bf__": "model", "type": type_name, "fields": fields or {}})


async def test_models_in_untyped_state_come_back_as_their_class(make_module: Make) -> None:
    """Models kept in untyped state, alone or in lists, dicts and tuples, keep their class."""
    mod = flow_module(
        make_module,
        """
        await ctx.store.set("item", Item(name="a"))
        await ctx.store.set("items", [Item(name="b"), Item(name="c", qty=2)])
        await ctx.store.set("by_key", {"d": Item(name="d"), 1: Item(name="e")})
        await ctx.store.set("pair", (Item(name="f"), Part(label="g")))
        """,
    )
    data = await snapshot(mod.Flow())
    forget(mod)
    ctx = Context.from_dict(mod.Flow(), data)
    item, items = await ctx.store.get("item"), await ctx.store.get("items")
    by_key, pair = await ctx.store.get("by_key"), await ctx.store.get("pair")
    assert type(item) is mod.Item and item == mod.Item(name="a")
    assert [type(i) for i in items] == [mod.Item, mod.Item] and items[1].qty == 2
    assert by_key == {"d": mod.Item(name="d"), 1: mod.Item(name="e")}
    assert type(by_key[1]) is mod.Item
    assert pair == (mod.Item(name="f"), mod.Part(label="g")) and type(pair[1]) is mod.Part


async def test_typed_state_keeps_models_its_fields_do_not_name(make_module: Make) -> None:
    """Context[Book]: a model in a ``dict[str, Any]`` field comes back as its class too."""
    mod = flow_module(make_module)
    data = await snapshot(mod.TypedFlow())
    forget(mod)
    ctx = Context.from_dict(mod.TypedFlow(), data)
    state = await ctx.store.get_state()
    assert type(state) is mod.Book and state.parts == [mod.Part(label="cover")]
    assert type(state.extra["note"]) is mod.Item


async def test_an_event_carrying_a_model_is_restored(make_module: Make) -> None:
    """An event (queued, sent or on the stream) holding a model in an ``Any`` field keeps it."""
    mod = flow_module(make_module)
    text = JsonSerializer().serialize(mod.Ping(payload=[mod.Item(name="p")]))
    forget(mod)
    Context(mod.Flow())  # nothing registered yet: a bare Context does not decode by name
    with pytest.raises(ContextSerdeError, match="not a type this process trusts"):
        JsonSerializer().deserialize(text)
    from batonflow.core.engine._snapshot import register_workflow

    register_workflow(mod.Flow())  # what a restore or a WorkflowCheckpointer does first
    event = JsonSerializer().deserialize(text)
    assert type(event) is mod.Ping and type(event.payload[0]) is mod.Item


async def test_a_class_the_workflow_module_imports_by_name_is_trusted(make_module: Make) -> None:
    """``from models import Shared`` in the workflow's module trusts ``Shared``."""
    shared = make_module(
        "from pydantic import BaseModel\n\nclass Shared(BaseModel):\n    v: int\n",
        prefix="bf_shared",
    )
    mod = flow_module(
        make_module,
        'await ctx.store.set("s", Shared(v=7))',
        imports=f"from {shared.__name__} import Shared",
    )
    data = await snapshot(mod.Flow())
    forget(mod)
    forget(shared)
    ctx = Context.from_dict(mod.Flow(), data)
    assert type(await ctx.store.get("s")) is shared.Shared


async def test_an_imported_module_the_workflow_does_not_reference_is_refused(
    make_module: Make,
) -> None:
    """A model of a module that is imported but no workflow in play references is refused,
    naming register_type(); registering it makes it restorable."""
    mod = flow_module(make_module)
    Context.from_dict(mod.Flow(), await snapshot(mod.Flow()))  # the workflow is in play
    other = make_module(
        "from pydantic import BaseModel\n\nclass Stray(BaseModel):\n    v: int\n",
        prefix="bf_other",
    )
    text = model_tree(f"{other.__name__}:Stray", {"v": 1})
    with pytest.raises(
        ContextSerdeError,
        match=rf"'{other.__name__}:Stray' is not a type this process trusts: classes are "
        rf"restored by name only from the modules of the workflows in play.*module "
        rf"'{other.__name__}' \(imported\) is none of them\. Call "
        r"batonflow\.core\.serialization\.register_type\(Stray\) in the module that defines it",
    ):
        JsonSerializer().deserialize(text)
    register_type(other.Stray)
    assert JsonSerializer().deserialize(text) == other.Stray(v=1)


SIDE_EFFECT = """
from pathlib import Path

Path(__file__).with_suffix(".imported").write_text("imported")
"""


async def test_a_module_named_by_data_is_never_imported(make_module: Make, tmp_path: Path) -> None:
    """Data naming an importable module with a side effect on import does not import it,
    even when it is one of a workflow's modules (trusted) that the process has not imported."""
    untrusted = make_module(SIDE_EFFECT, prefix="bf_effect", load=False)
    trusted = make_module(SIDE_EFFECT, prefix="bf_effect", load=False)
    TRUSTED_MODULES.add(trusted)
    with pytest.raises(ContextSerdeError, match=rf"'{untrusted}' \(not imported\) is none of"):
        JsonSerializer().deserialize(model_tree(f"{untrusted}:Model"))
    with pytest.raises(
        ContextSerdeError,
        match=rf"module '{trusted}' belongs to a workflow in play but is not imported, and "
        r"data never makes this process import a module\. Import it before resuming\.",
    ):
        JsonSerializer().deserialize(model_tree(f"{trusted}:Model"))
    assert untrusted not in sys.modules and trusted not in sys.modules
    assert list(tmp_path.glob("*.imported")) == []


@pytest.mark.parametrize(
    ("qualname", "match"),
    [
        pytest.param(
            "Gone", r"module '.*' has no pydantic model Gone; it was renamed or removed", id="gone"
        ),
        pytest.param("Flow", r"has no pydantic model Flow", id="not-a-model"),
        pytest.param("Alias", r"has no pydantic model Alias", id="alias-of-another-class"),
        pytest.param(
            "f.<locals>.Local",
            r"defined inside a function.*Define it at module level.*register_type\(Local\)",
            id="local",
        ),
    ],
)
async def test_a_trusted_module_restores_only_its_models(
    make_module: Make, qualname: str, match: str
) -> None:
    """In a workflow's module only a pydantic model written under its own name is found."""
    mod = flow_module(make_module, imports="from decimal import Decimal as Alias")
    Context.from_dict(mod.Flow(), await snapshot(mod.Flow()))
    with pytest.raises(ContextSerdeError, match=match):
        JsonSerializer().deserialize(model_tree(f"{mod.__name__}:{qualname}"))


async def test_a_class_of_the_writers_main_is_refused_with_the_fix() -> None:
    """A ``__main__`` class no workflow in play defines: the error says to move it."""
    with pytest.raises(
        ContextSerdeError,
        match=r"'__main__:NoSuchThing' is not a type this process trusts: it was defined in the "
        r"script the writing process ran as __main__.*Move NoSuchThing to an importable module"
        r".*register_type\(NoSuchThing\) before resuming\.",
    ):
        JsonSerializer().deserialize(model_tree("__main__:NoSuchThing"))


class Color(enum.Enum):
    """An enum for the test below."""

    RED = "red"


class Paint(BaseModel):
    """A model with an enum field."""

    color: Color


async def test_an_enum_member_keeps_its_class_only_in_a_typed_field() -> None:
    """An Enum member is written as its value: a model field of the enum's type restores the
    member; in untyped state it comes back as the value (documented in docs/state.md)."""
    ser = JsonSerializer()
    assert ser.deserialize(ser.serialize({"c": Color.RED})) == {"c": "red"}
    assert ser.deserialize(ser.serialize(Paint(color=Color.RED))).color is Color.RED


async def test_the_modules_of_base_workflows_and_of_step_annotations_are_trusted(
    make_module: Make,
) -> None:
    """Models of the module of a base workflow class (with no steps) and of the module of an
    event a step's annotation names come back, though the workflow's own module does not
    name them."""
    base = make_module(
        """
        from pydantic import BaseModel
        from batonflow.core import Workflow

        class FromBase(BaseModel):
            v: int

        class Base(Workflow):
            pass
        """,
        prefix="bf_base",
    )
    events = make_module(
        """
        from pydantic import BaseModel
        from batonflow.core import StopEvent

        class FromEvents(BaseModel):
            v: int

        class Done(StopEvent):
            pass
        """,
        prefix="bf_events",
    )
    flow = make_module(
        f"""
        import {base.__name__} as base, {events.__name__} as events
        from batonflow.core import Context, StartEvent, step

        class Flow(base.Base):
            @step
            async def only(self, ctx: Context, ev: StartEvent) -> events.Done:
                await ctx.store.set("a", base.FromBase(v=1))
                await ctx.store.set("b", events.FromEvents(v=2))
                return events.Done(result="ok")
        """,
        prefix="bf_sub",
    )
    data = await snapshot(flow.Flow())
    for mod in (base, events, flow):
        forget(mod)
    ctx = Context.from_dict(flow.Flow(), data)
    assert type(await ctx.store.get("a")) is base.FromBase
    assert type(await ctx.store.get("b")) is events.FromEvents
