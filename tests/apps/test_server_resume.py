"""POST /runs/{id}/resume: an interrupted or failed run continues from its last checkpoint."""

from __future__ import annotations

import httpx
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app

from .flows import FlakyFlow, flaky_app


def _finished(c: httpx.Client, run_id: str) -> dict:
    with c.stream("GET", f"/runs/{run_id}/events") as events:
        for line in events.iter_lines():
            if line.startswith("event: end"):
                break
    return c.get(f"/runs/{run_id}").json()


def test_a_failed_run_resumes_as_a_new_run_without_redoing_its_steps(tmp_path):
    """After a transient failure, resume continues at the failed step: draft is not redone."""
    with (
        BackgroundServer(flaky_app(tmp_path / "runs.db")) as server,
        httpx.Client(base_url=server.url, timeout=20) as c,
    ):
        run_id = c.post("/workflows/flaky/runs", json={"topic": "pirates"}).json()["run_id"]
        failed = _finished(c, run_id)
        assert failed["status"] == "failed" and "publisher is down" in failed["error"]
        resumed = c.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 200, resumed.text
        new_id = resumed.json()["run_id"]
        assert new_id != run_id
        done = _finished(c, new_id)
        assert (done["status"], done["result"]) == ("completed", "PIRATES")
        assert FlakyFlow.drafts == 1  # the completed step did not run again
        again = c.post(f"/runs/{new_id}/resume")
        assert again.status_code == 409 and "is completed" in again.json()["detail"]
        assert c.post("/runs/nope/resume").status_code == 404
        assert "/runs/{run_id}/resume" in c.get("/openapi.json").json()["paths"]


def test_without_checkpoints_there_is_nothing_to_resume_from(tmp_path):
    """A server without checkpoints answers 409 with what to do instead."""
    FlakyFlow.drafts, FlakyFlow.outages = 0, 1
    app = create_app({"flaky": FlakyFlow(timeout=None)}, store=RunStore(tmp_path / "runs.db"))
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=20) as c:
        run_id = c.post("/workflows/flaky/runs", json={"topic": "x"}).json()["run_id"]
        assert _finished(c, run_id)["status"] == "failed"
        refused = c.post(f"/runs/{run_id}/resume")
        assert refused.status_code == 409
        assert "has no checkpoint" in refused.json()["detail"]
        assert "start it again" in refused.json()["detail"]
