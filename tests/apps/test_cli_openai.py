"""With OPENAI_API_KEY set, the LLM flows of the command line call OpenAI (mocked with respx)."""

from __future__ import annotations

import json

import httpx
import respx
from batonflow.apps.cli import app
from typer.testing import CliRunner

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
runner = CliRunner()


def _reply(content: str, stream: bool) -> httpx.Response:
    if not stream:
        return httpx.Response(
            200,
            json={
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )
    chunks = [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": content},
                    "finish_reason": None,
                }
            ],
        }
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


def _scripted(*answers: str):
    replies = list(answers)

    def respond(request: httpx.Request) -> httpx.Response:
        stream = bool(json.loads(request.content).get("stream"))
        return _reply(replies.pop(0), stream)

    return respond


def test_joke_flow_uses_openai_with_the_configured_model(monkeypatch):
    """`run joke` builds OpenAI from OPENAI_API_KEY and BATONFLOW_MODEL; the critique is printed."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("BATONFLOW_MODEL", "gpt-4o-mini")
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(OPENAI_CHAT).mock(
            side_effect=_scripted(
                "Why did the pirate learn C? For the arrrrays.", "A solid pun; 7/10."
            )
        )
        result = runner.invoke(app, ["run", "joke", "--set", "topic=pirates", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1])["result"] == "A solid pun; 7/10."
    first = json.loads(route.calls[0].request.content)
    assert first["model"] == "gpt-4o-mini" and "pirates" in json.dumps(first["messages"])
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-test"


def test_rag_ask_answers_with_openai_and_cites(monkeypatch, tmp_path):
    """`rag ask` with a key sends the question and the sources to OpenAI and prints its answer."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is steeped at 80 degrees.\n")
    where = ["--qdrant-path", str(tmp_path / "q")]
    assert runner.invoke(app, ["rag", "ingest", str(docs), *where]).exit_code == 0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(OPENAI_CHAT).mock(side_effect=_scripted("At 80 degrees [1]."))
        result = runner.invoke(app, ["rag", "ask", "How hot for green tea?", *where])
    assert result.exit_code == 0, result.output
    assert "At 80 degrees [1]." in result.stdout and "[1] tea.md" in result.stdout
    assert "How hot for green tea?" in route.calls[0].request.content.decode()
