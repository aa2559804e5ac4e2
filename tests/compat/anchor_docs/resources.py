# Ported from the anchor's docs page llamaagents/workflows/resources.md.
# Filled in: the JSON files the page reads are written first; Anthropic is a ScriptedLLM built
# from the config's model name; the two ResourceConfig fragments (path_selector, label) are put
# in workflows of their own; `print(..., memory)` prints the memory's messages instead of the
# Memory object (its repr holds an object address that changes every run); main() runs each
# workflow and prints its result, and shows that get_memory ran once for both steps; the
# page's sentence on `cache=False` is shown by FreshMemories (each step its own object).
import asyncio
import json
from pathlib import Path
from typing import Annotated

from _llm import ScriptedLLM as Anthropic
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from pydantic import BaseModel
from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent
from workflows.resource import Resource, ResourceConfig

memories_made = []


def get_memory(*args, **kwargs):
    memories_made.append(1)
    return Memory.from_defaults("user_id_123", token_limit=60000)


async def messages(memory):
    return [m.content for m in await memory.aget_all()]


class SecondEvent(Event):
    msg: str


class WorkflowWithResource(Workflow):
    @step
    async def first_step(
        self,
        ev: StartEvent,
        memory: Annotated[Memory, Resource(get_memory)],
    ) -> SecondEvent:
        print("Memory before step 1", await messages(memory))
        await memory.aput(ChatMessage(role="user", content="This is the first step"))
        print("Memory after step 1", await messages(memory))
        return SecondEvent(msg="This is an input for step 2")

    @step
    async def second_step(
        self, ev: SecondEvent, memory: Annotated[Memory, Resource(get_memory)]
    ) -> StopEvent:
        print("Memory before step 2", await messages(memory))
        await memory.aput(ChatMessage(role="user", content=ev.msg))
        print("Memory after step 2", await messages(memory))
        return StopEvent(result="Messages put into memory")


class FreshMemories(Workflow):
    @step
    async def first_step(
        self, ev: StartEvent, memory: Annotated[Memory, Resource(get_memory, cache=False)]
    ) -> SecondEvent:
        await memory.aput(ChatMessage(role="user", content="only in the first memory"))
        return SecondEvent(msg=str(id(memory)))

    @step
    async def second_step(
        self, ev: SecondEvent, memory: Annotated[Memory, Resource(get_memory, cache=False)]
    ) -> StopEvent:
        return StopEvent(result=(ev.msg == str(id(memory)), await messages(memory)))


class ClassifierConfig(BaseModel):
    categories: list[str]
    threshold: float


class DocumentClassifier(Workflow):
    @step
    async def classify(
        self,
        ev: StartEvent,
        config: Annotated[
            ClassifierConfig,
            ResourceConfig(config_file="classifier.json"),
        ],
    ) -> StopEvent:
        # config is loaded from classifier.json and validated as ClassifierConfig
        return StopEvent(result=f"Using threshold: {config.threshold}")


class NestedClassifier(Workflow):
    @step
    async def classify(
        self,
        ev: StartEvent,
        config: Annotated[
            ClassifierConfig,
            ResourceConfig(config_file="config.json", path_selector="classifier"),
        ],
    ) -> StopEvent:
        return StopEvent(result=f"{config.categories} above {config.threshold}")


class LabelledClassifier(Workflow):
    @step
    async def classify(
        self,
        ev: StartEvent,
        config: Annotated[
            ClassifierConfig,
            ResourceConfig(
                config_file="classifier.json",
                label="Document Classifier",
                description="Categories and confidence threshold for classification",
            ),
        ],
    ) -> StopEvent:
        return StopEvent(result=config.categories)


class LLMConfig(BaseModel):
    model: str
    temperature: float
    max_tokens: int


def get_llm(
    config: Annotated[LLMConfig, ResourceConfig(config_file="llm.json")],
) -> Anthropic:
    # Filled in: the scripted LLM takes only the model name.
    return Anthropic(model=f"{config.model}@{config.temperature}/{config.max_tokens}")


class MyWorkflow(Workflow):
    @step
    async def generate(
        self,
        ev: StartEvent,
        llm: Annotated[Anthropic, Resource(get_llm)],
    ) -> StopEvent:
        response = await llm.acomplete(ev.input)
        return StopEvent(result=response.text)


async def main():
    print(await WorkflowWithResource().run())
    print("get_memory calls:", len(memories_made))
    print("cache=False, same object and messages:", await FreshMemories().run())
    print("get_memory calls:", len(memories_made))

    Path("classifier.json").write_text(json.dumps({"categories": ["a", "b"], "threshold": 0.5}))
    Path("config.json").write_text(
        json.dumps({"classifier": {"categories": ["x"], "threshold": 0.8}, "other": {}})
    )
    Path("llm.json").write_text(
        json.dumps({"model": "claude", "temperature": 0.2, "max_tokens": 100})
    )
    print(await DocumentClassifier().run())
    print(await NestedClassifier().run())
    print(await LabelledClassifier().run())
    print(await MyWorkflow().run(input="Say hi"))


asyncio.run(main())
