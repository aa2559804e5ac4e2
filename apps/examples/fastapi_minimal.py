"""The seed's minimal service: a workflow behind ``POST /run?topic=…`` with FastAPI.

Run it with ``uvicorn batonflow.apps.examples.fastapi_minimal:app`` and call
``curl -X POST 'localhost:8000/run?topic=Agent'``. The flow asks an LLM for a one-sentence
introduction of the topic: OpenAI (``gpt-4o``) when ``OPENAI_API_KEY`` is set, otherwise
llama-index's offline ``MockLLM``, which echoes the prompt, so the example runs anywhere.
For runs you can follow, answer and cancel, use :func:`batonflow.apps.server.create_app`.
"""

from __future__ import annotations

import os
from typing import Any

from batonflow.core import StartEvent, StopEvent, Workflow, step
from fastapi import FastAPI


def default_llm() -> Any:
    """OpenAI when ``OPENAI_API_KEY`` is set, else an offline echoing ``MockLLM``."""
    if os.environ.get("OPENAI_API_KEY"):
        from llama_index.llms.openai import OpenAI

        return OpenAI(model="gpt-4o")
    from llama_index.core.llms import MockLLM

    return MockLLM()


class MyFlow(Workflow):
    """One step: introduce ``topic`` in one sentence."""

    def __init__(self, llm: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.llm = llm

    @step
    async def generate(self, ev: StartEvent) -> StopEvent:
        """Ask the LLM for a one-sentence introduction of the topic."""
        llm = self.llm or default_llm()
        prompt = ev.get("topic", "AI Agent")
        resp = await llm.acomplete(f"Introduce in one sentence: {prompt}")
        return StopEvent(result=str(resp))


app = FastAPI()
# The LLM is made when the module is imported, so the first request does not pay for importing
# llama-index (seconds on a loaded machine) inside the run's timeout.
flow = MyFlow(llm=default_llm(), timeout=60)


@app.post("/run")
async def run(topic: str) -> dict[str, Any]:
    """Run the flow on ``topic`` and return its result."""
    return {"result": await flow.run(topic=topic)}
