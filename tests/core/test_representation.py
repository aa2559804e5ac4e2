"""get_workflow_representation: a workflow's steps, events, outside world and resources as data."""

import json
from typing import Annotated

import pytest
from batonflow.core.context import Context
from batonflow.core.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)
from batonflow.core.representation import (
    WorkflowEventNode,
    WorkflowExternalNode,
    WorkflowGenericNode,
    WorkflowGraph,
    WorkflowGraphEdge,
    WorkflowResourceConfigNode,
    WorkflowResourceNode,
    WorkflowStepNode,
    get_workflow_representation,
)
from batonflow.core.resource import Resource, ResourceConfig
from batonflow.core.step import step
from batonflow.core.workflow import Workflow
from pydantic import BaseModel


class JokeEvent(Event):
    joke: str


class CritiqueEvent(Event):
    critique: str


class RetryEvent(Event):
    pass


def edge_set(graph: WorkflowGraph) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in graph.edges}


class JokeFlow(Workflow):
    """Write a joke, then critique it."""

    @step
    async def generate_joke(self, ev: StartEvent) -> JokeEvent:
        """Ask for a joke about the topic."""
        return JokeEvent(joke=str(ev.topic))

    @step
    async def critique_joke(self, ev: JokeEvent) -> StopEvent:
        return StopEvent(result=ev.joke)


def test_linear_workflow_alternates_events_and_steps():
    """A two-step flow is StartEvent -> step -> JokeEvent -> step -> StopEvent."""
    graph = get_workflow_representation(JokeFlow)
    assert graph.name == "JokeFlow"
    assert graph.description == "Write a joke, then critique it."
    assert [s.label for s in graph.steps] == ["generate_joke", "critique_joke"]
    assert edge_set(graph) == {
        ("event:StartEvent", "step:generate_joke"),
        ("step:generate_joke", "event:JokeEvent"),
        ("event:JokeEvent", "step:critique_joke"),
        ("step:critique_joke", "event:StopEvent"),
    }
    assert graph.node("step:generate_joke").description == "Ask for a joke about the topic."


def test_start_and_stop_events_are_distinguished():
    """StartEvent and StopEvent nodes carry their role; other events are plain."""
    graph = get_workflow_representation(JokeFlow)
    roles = {e.event_type: e.role for e in graph.events}
    assert roles == {"StartEvent": "start", "JokeEvent": "event", "StopEvent": "stop"}
    joke = graph.event_node("JokeEvent")
    assert joke is not None
    assert joke.produced_by == ("generate_joke",) and joke.consumed_by == ("critique_joke",)
    assert joke.event_types == ("JokeEvent", "Event")


def test_instance_and_class_give_the_same_graph():
    """Drawing an instance equals drawing its class when no step is attached."""
    assert get_workflow_representation(JokeFlow()) == get_workflow_representation(JokeFlow)


def test_branching_workflow_has_one_edge_per_emitted_event():
    """A step returning a union fans out to each event of the union."""

    class BranchFlow(Workflow):
        @step
        async def route(self, ev: StartEvent) -> JokeEvent | CritiqueEvent:
            return JokeEvent(joke="a")

        @step
        async def on_joke(self, ev: JokeEvent) -> StopEvent:
            return StopEvent()

        @step
        async def on_critique(self, ev: CritiqueEvent) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(BranchFlow)
    assert {("step:route", "event:JokeEvent"), ("step:route", "event:CritiqueEvent")} <= edge_set(
        graph
    )
    stop_producers = {e.source for e in graph.edges if e.target == "event:StopEvent"}
    assert stop_producers == {"step:on_joke", "step:on_critique"}
    assert not any(isinstance(n, WorkflowExternalNode) for n in graph.nodes)


def test_loop_workflow_has_an_edge_back_into_the_step():
    """A step that may return its own input type draws a cycle."""

    class LoopFlow(Workflow):
        @step
        async def attempt(self, ev: StartEvent | RetryEvent) -> RetryEvent | StopEvent:
            return StopEvent()

    graph = get_workflow_representation(LoopFlow)
    assert {("step:attempt", "event:RetryEvent"), ("event:RetryEvent", "step:attempt")} <= (
        edge_set(graph)
    )


def test_human_in_the_loop_events_go_through_the_external_node():
    """InputRequiredEvent goes out to the external node; HumanResponseEvent comes from it."""

    class AskFlow(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> InputRequiredEvent:
            return InputRequiredEvent(prefix="name? ")

        @step
        async def answer(self, ev: HumanResponseEvent) -> StopEvent:
            return StopEvent(result=ev.response)

    graph = get_workflow_representation(AskFlow)
    external = graph.node("external")
    assert isinstance(external, WorkflowExternalNode)
    assert {
        ("event:InputRequiredEvent", "external"),
        ("external", "event:HumanResponseEvent"),
    } <= edge_set(graph)
    roles = {e.event_type: e.role for e in graph.events}
    assert roles["InputRequiredEvent"] == "input_required"
    assert roles["HumanResponseEvent"] == "human_response"


def test_human_response_subclass_also_comes_from_outside():
    """A subclass of HumanResponseEvent is drawn as sent from outside."""

    class Answer(HumanResponseEvent):
        pass

    class SubFlow(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> InputRequiredEvent | None:
            return None

        @step
        async def answer(self, ev: Answer) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(SubFlow)
    assert ("external", "event:Answer") in edge_set(graph)
    assert graph.event_node("Answer").role == "human_response"


def test_workflow_without_outside_events_has_no_external_node():
    """No external node is drawn when no event crosses the run's boundary."""
    graph = get_workflow_representation(JokeFlow)
    with pytest.raises(KeyError, match="JokeFlow has no node 'external'; its nodes are"):
        graph.node("external")


def get_llm() -> str:
    """Make the language model client."""
    return "llm"


def get_memory(llm: Annotated[str, Resource(get_llm)]) -> list[str]:
    return [llm]


class Settings(BaseModel):
    model: str = "x"


def test_resources_are_nodes_with_edges_labelled_by_parameter(tmp_path):
    """One node per factory, shared by the steps using it, edge label = parameter name."""
    config = tmp_path / "settings.json"

    class ResFlow(Workflow):
        @step
        async def first(
            self,
            ev: StartEvent,
            llm: Annotated[str, Resource(get_llm)],
            settings: Annotated[Settings, ResourceConfig(str(config), path_selector="chat")],
        ) -> JokeEvent:
            return JokeEvent(joke="x")

        @step
        async def second(
            self, ev: JokeEvent, model: Annotated[str, Resource(get_llm, cache=False)]
        ) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(ResFlow)
    resources = [n for n in graph.nodes if isinstance(n, WorkflowResourceNode)]
    assert len(resources) == 1
    res = resources[0]
    assert res.label == "get_llm"
    assert res.getter_name and res.getter_name.endswith("get_llm")
    assert res.type_name == "str"
    assert res.description == "Make the language model client."
    labelled = {(e.source, e.target, e.label) for e in graph.edges}
    assert (res.id, "step:first", "llm") in labelled
    assert (res.id, "step:second", "model") in labelled
    configs = [n for n in graph.nodes if isinstance(n, WorkflowResourceConfigNode)]
    assert len(configs) == 1
    assert configs[0].config_file == str(config)
    assert configs[0].path_selector == "chat"
    assert (configs[0].id, "step:first", "settings") in labelled


def test_resource_dependencies_are_drawn_between_resources():
    """A factory that takes another resource gets an edge from that resource."""

    class MemFlow(Workflow):
        @step
        async def only(
            self, ev: StartEvent, memory: Annotated[list[str], Resource(get_memory)]
        ) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(MemFlow)
    ids = {n.label: n.id for n in graph.nodes if isinstance(n, WorkflowResourceNode)}
    assert set(ids) == {"get_memory", "get_llm"}
    assert (ids["get_llm"], ids["get_memory"], "llm") in {
        (e.source, e.target, e.label) for e in graph.edges
    }


def test_custom_start_and_stop_events_take_the_roles():
    """Subclasses of StartEvent/StopEvent are the start and stop nodes."""

    class TopicStart(StartEvent):
        topic: str

    class Verdict(StopEvent):
        verdict: str

    class TypedFlow(Workflow):
        @step
        async def judge(self, ev: TopicStart) -> Verdict:
            return Verdict(verdict=ev.topic)

    graph = get_workflow_representation(TypedFlow)
    assert {e.event_type: e.role for e in graph.events} == {
        "TopicStart": "start",
        "Verdict": "stop",
    }
    assert graph.event_node("TopicStart").event_types == ("TopicStart", "StartEvent", "Event")


def test_events_sent_from_outside_come_from_the_external_node():
    """An accepted event that no step returns is drawn as coming from outside."""

    class Nudge(Event):
        pass

    class NudgeFlow(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> None:
            return None

        @step
        async def nudged(self, ev: Nudge) -> StopEvent:
            return StopEvent()

    # Validation would reject Nudge (nobody produces it); drawing still shows the truth.
    graph = get_workflow_representation(NudgeFlow)
    assert ("external", "event:Nudge") in edge_set(graph)


def test_steps_attached_to_an_instance_are_included():
    """@step(workflow=w) steps appear in the instance's graph, not the class's."""

    class Base(Workflow):
        @step
        async def start(self, ev: StartEvent) -> JokeEvent:
            return JokeEvent(joke="x")

    w = Base(disable_validation=True)  # completed below: Base alone has no StopEvent

    @step(workflow=w)
    async def finish(ev: JokeEvent) -> StopEvent:
        return StopEvent()

    assert "step:finish" in {n.id for n in get_workflow_representation(w).nodes}
    assert "step:finish" not in {n.id for n in get_workflow_representation(Base).nodes}


def test_same_named_event_classes_get_distinct_nodes():
    """Two event classes with one name are told apart by their qualified names."""

    def make() -> type[Event]:
        class Twin(Event):
            pass

        return Twin

    first, second = make(), make()

    class TwinFlow(Workflow):
        @step
        async def a(self, ev: StartEvent) -> first:  # type: ignore[valid-type]
            return first()

        @step
        async def b(self, ev: first) -> second:  # type: ignore[valid-type]
            return second()

        @step
        async def c(self, ev: second) -> StopEvent:  # type: ignore[valid-type]
            return StopEvent()

    graph = get_workflow_representation(TwinFlow)
    twins = [e for e in graph.events if e.event_type == "Twin"]
    assert len(twins) == 2 and twins[0].id != twins[1].id


def test_to_dict_is_json_and_round_trips():
    """to_dict() is plain JSON data and from_dict() rebuilds an equal graph."""

    class AskFlow(Workflow):
        @step
        async def ask(
            self, ev: StartEvent, llm: Annotated[str, Resource(get_llm)]
        ) -> InputRequiredEvent:
            return InputRequiredEvent()

        @step
        async def answer(self, ev: HumanResponseEvent) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(AskFlow)
    data = json.loads(json.dumps(graph.to_dict()))
    assert {n["node_type"] for n in data["nodes"]} == {"step", "event", "external", "resource"}
    assert WorkflowGraph.from_dict(data) == graph


def test_from_dict_keeps_unknown_node_kinds_as_generic():
    """A node type batonflow does not know becomes a WorkflowGenericNode."""
    graph = WorkflowGraph(
        "Agents",
        (WorkflowGenericNode("agent:a", "Writer", node_type="agent"),),
        (WorkflowGraphEdge("agent:a", "agent:a"),),
    )
    assert WorkflowGraph.from_dict(graph.to_dict()) == graph


def test_from_dict_rejects_other_data():
    """Data that is not a graph dict gets a ValueError saying what to pass."""
    with pytest.raises(ValueError, match=r"pass the output of WorkflowGraph.to_dict\(\)"):
        WorkflowGraph.from_dict({"name": "x"})


@pytest.mark.parametrize(
    "thing",
    [
        pytest.param(object(), id="object"),
        pytest.param(StartEvent, id="event-class"),
        pytest.param("JokeFlow", id="name-string"),
    ],
)
def test_non_workflows_are_rejected(thing):
    """Anything but a Workflow subclass or instance is a TypeError naming what to pass."""
    with pytest.raises(TypeError, match="pass the workflow class"):
        get_workflow_representation(thing)


def test_node_kinds_are_typed():
    """Each node kind is its own record type with a node_type tag."""
    graph = get_workflow_representation(JokeFlow)
    assert all(isinstance(n, WorkflowStepNode | WorkflowEventNode) for n in graph.nodes)
    assert {n.node_type for n in graph.nodes} == {"step", "event"}


def test_context_parameter_is_not_a_resource():
    """A Context parameter adds no node."""

    class CtxFlow(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(CtxFlow)
    assert {n.node_type for n in graph.nodes} == {"step", "event"}


def test_events_reach_steps_that_accept_a_base_class():
    """An emitted subclass flows to the step accepting its base class, as the engine routes it."""

    class Base(Event):
        pass

    class Child(Base):
        pass

    class SubFlow(Workflow):
        @step
        async def make(self, ev: StartEvent) -> Child:
            return Child()

        @step
        async def take(self, ev: Base) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(SubFlow)
    assert ("event:Child", "step:take") in edge_set(graph)
    assert graph.event_node("Base") is None  # nothing but Child ever arrives as a Base
    assert graph.event_node("Child").consumed_by == ("take",)
    assert "external" not in {n.id for n in graph.nodes}


def test_base_class_emitted_itself_keeps_its_own_node():
    """When the base class is emitted too, both it and the subclass flow into the step."""

    class Base(Event):
        pass

    class Child(Base):
        pass

    class BothFlow(Workflow):
        @step
        async def make(self, ev: StartEvent) -> Base | Child:
            return Child()

        @step
        async def take(self, ev: Base) -> StopEvent:
            return StopEvent()

    edges = edge_set(get_workflow_representation(BothFlow))
    assert {("event:Base", "step:take"), ("event:Child", "step:take")} <= edges


def test_filter_by_node_type_connects_through_removed_nodes():
    """Filtering events out leaves step -> step edges; filtering resources drops them."""

    class LoopFlow(Workflow):
        @step
        async def attempt(
            self, ev: StartEvent | RetryEvent, llm: Annotated[str, Resource(get_llm)]
        ) -> RetryEvent | JokeEvent:
            return JokeEvent(joke="x")

        @step
        async def finish(self, ev: JokeEvent) -> StopEvent:
            return StopEvent()

    graph = get_workflow_representation(LoopFlow)
    steps_only = graph.filter_by_node_type("event", "resource")
    assert {n.id for n in steps_only.nodes} == {"step:attempt", "step:finish"}
    assert edge_set(steps_only) == {
        ("step:attempt", "step:attempt"),
        ("step:attempt", "step:finish"),
    }
    no_resources = graph.filter_by_node_type("resource")
    assert edge_set(no_resources) == {
        (e.source, e.target) for e in graph.edges if not e.source.startswith("resource:")
    }
