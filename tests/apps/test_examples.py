"""apps/examples: the seed's minimal FastAPI service and the approval (HITL) flow."""

from __future__ import annotations

import httpx
import respx
from batonflow.apps.examples import fastapi_minimal
from batonflow.apps.examples.approval import ApprovalFlow
from batonflow.apps.server import BackgroundServer
from batonflow.core import HumanResponseEvent, InputRequiredEvent


def test_fastapi_minimal_post_run_topic_over_http(monkeypatch):
    """POST /run?topic=Agent answers {"result": ...} from the flow (offline MockLLM)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with BackgroundServer(fastapi_minimal.app) as server:
        response = httpx.post(f"{server.url}/run", params={"topic": "Agent"}, timeout=20)
    assert response.status_code == 200
    assert response.json() == {"result": "Introduce in one sentence: Agent"}


def test_fastapi_minimal_requires_topic():
    """Without ?topic= FastAPI answers 422 naming the missing query parameter."""
    with BackgroundServer(fastapi_minimal.app) as server:
        response = httpx.post(f"{server.url}/run", timeout=20)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "topic"]


async def test_fastapi_minimal_flow_with_openai_mocked(monkeypatch):
    """With OPENAI_API_KEY set the flow calls OpenAI (mocked with respx) with the seed prompt."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "An agent is a program that uses tools.",
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post("https://api.openai.com/v1/chat/completions").respond(json=completion)
        result = await fastapi_minimal.MyFlow(timeout=10).run(topic="Agent")
    assert result == "An agent is a program that uses tools."
    assert "Introduce in one sentence: Agent" in route.calls[0].request.content.decode()


async def test_approval_flow_records_the_decision():
    """ApprovalFlow asks once and reports approved=True only for an approving answer."""
    for answer, approved in (("LGTM", True), ("no", False)):
        handler = ApprovalFlow(timeout=10).run(topic="v3")
        asked = 0
        async for event in handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                asked += 1
                assert "v3" in event.draft
                handler.ctx.send_event(HumanResponseEvent(response=answer))
        result = await handler
        assert asked == 1
        assert result["approved"] is approved and result["answer"] == answer
