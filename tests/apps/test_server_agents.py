"""What ``GET /workflows`` says of served agents: where a chat message goes, a JSON start form."""

from __future__ import annotations

import httpx
from batonflow.agents import ReActAgent
from batonflow.agents.testing import ScriptedLLM
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app

from . import agent_flows, flows


def test_agents_are_listed_with_their_chat_fields(tmp_path):
    """An agent names its message and history fields; other workflows have chat null."""
    served = {
        "calc": agent_flows.calc,
        "relay": agent_flows.relay,
        "react": ReActAgent(llm=ScriptedLLM([])),
        "echo": flows.EchoFlow(),
    }
    server = BackgroundServer(create_app(served, store=RunStore(tmp_path / "runs.db"))).start()
    try:
        listed = {w["name"]: w for w in httpx.get(f"{server.url}/workflows").json()["workflows"]}
    finally:
        server.stop()
    chat = {"message": "user_msg", "history": "chat_history"}
    assert [listed[name]["chat"] for name in ("calc", "relay", "react", "echo")] == [
        chat,
        chat,
        chat,
        None,
    ]
    # The start form holds JSON fields only: memory and output_cls are Python objects.
    assert list(listed["calc"]["start_event"]["properties"]) == [
        "user_msg",
        "chat_history",
        "max_iterations",
        "early_stopping_method",
        "tool_choice",
    ]
