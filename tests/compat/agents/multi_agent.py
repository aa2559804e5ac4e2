"""docs/examples/agent/agent_workflow_multi.ipynb: research, write and review agents handing off.

Filled in: one scripted LLM for the three agents' OpenAI (the script is their replies in
turn), stubbed web search; the notebook's event loop is kept as it is.
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import (
    AgentOutput,
    AgentWorkflow,
    FunctionAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.workflow import Context

llm = ScriptedLLM(
    [
        call("search_web", "c1", query="history of the web"),
        call("record_notes", "c2", notes="The web was invented in 1989.", notes_title="Origins"),
        call("handoff", "c3", to_agent="WriteAgent", reason="The notes are ready."),
        call("write_report", "c4", report_content="# The web\nInvented in 1989."),
        call("handoff", "c5", to_agent="ReviewAgent", reason="The report is written."),
        call("review_report", "c6", review="Approved."),
        "The report is approved.",
    ]
)


async def search_web(query: str) -> str:
    """Useful for using the web to answer questions."""
    return "Tim Berners-Lee invented the web in 1989."


async def record_notes(ctx: Context, notes: str, notes_title: str) -> str:
    """Useful for recording notes on a given topic."""
    current_state = await ctx.store.get("state")
    if "research_notes" not in current_state:
        current_state["research_notes"] = {}
    current_state["research_notes"][notes_title] = notes
    await ctx.store.set("state", current_state)
    return "Notes recorded."


async def write_report(ctx: Context, report_content: str) -> str:
    """Useful for writing a report on a given topic."""
    current_state = await ctx.store.get("state")
    current_state["report_content"] = report_content
    await ctx.store.set("state", current_state)
    return "Report written."


async def review_report(ctx: Context, review: str) -> str:
    """Useful for reviewing a report and providing feedback."""
    current_state = await ctx.store.get("state")
    current_state["review"] = review
    await ctx.store.set("state", current_state)
    return "Report reviewed."


research_agent = FunctionAgent(
    name="ResearchAgent",
    description="Useful for searching the web for information on a given topic and recording notes on the topic.",
    system_prompt="You are the ResearchAgent. Once notes are recorded, hand off to the WriteAgent.",
    llm=llm,
    tools=[search_web, record_notes],
    can_handoff_to=["WriteAgent"],
)
write_agent = FunctionAgent(
    name="WriteAgent",
    description="Useful for writing a report on a given topic.",
    system_prompt="You are the WriteAgent. Once written, get feedback from the ReviewAgent.",
    llm=llm,
    tools=[write_report],
    can_handoff_to=["ReviewAgent", "ResearchAgent"],
)
review_agent = FunctionAgent(
    name="ReviewAgent",
    description="Useful for reviewing a report and providing feedback.",
    system_prompt="You are the ReviewAgent.",
    llm=llm,
    tools=[review_report],
    can_handoff_to=["WriteAgent"],
)
agent_workflow = AgentWorkflow(
    agents=[research_agent, write_agent, review_agent],
    root_agent=research_agent.name,
    initial_state={
        "research_notes": {},
        "report_content": "Not written yet.",
        "review": "Review required.",
    },
)


async def main() -> None:
    handler = agent_workflow.run(user_msg="Write me a report on the history of the web.")
    current_agent = None
    async for event in handler.stream_events():
        if hasattr(event, "current_agent_name") and event.current_agent_name != current_agent:
            current_agent = event.current_agent_name
            print(f"\n{'=' * 50}")
            print(f"🤖 Agent: {current_agent}")
            print(f"{'=' * 50}\n")
        elif isinstance(event, AgentOutput):
            if event.response.content:
                print("📤 Output:", event.response.content)
            if event.tool_calls:
                print("🛠️  Planning to use tools:", [call.tool_name for call in event.tool_calls])
        elif isinstance(event, ToolCallResult):
            print(f"🔧 Tool Result ({event.tool_name}):")
            print(f"  Arguments: {event.tool_kwargs}")
            print(f"  Output: {event.tool_output}")
        elif isinstance(event, ToolCall):
            print(f"🔨 Calling Tool: {event.tool_name}")
            print(f"  With arguments: {event.tool_kwargs}")
    state = await handler.ctx.store.get("state")
    print(state["report_content"], state["review"])
    show_calls(llm)


asyncio.run(main())
