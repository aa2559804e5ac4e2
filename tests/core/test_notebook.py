"""What notebooks are shown: MIME bundles of workflows and runs, drawings, and watch()."""

from __future__ import annotations

import pytest
from batonflow.core import (
    Context,
    Event,
    StartEvent,
    StopEvent,
    Workflow,
    draw_all_possible_flows,
    draw_all_possible_flows_mermaid,
    step,
)
from batonflow.core.notebook import Drawing, MermaidText, watch


class Tick(Event):
    n: int


class Counter(Workflow):
    @step
    async def count(self, ctx: Context, ev: StartEvent) -> StopEvent:
        for n in range(3):
            ctx.write_event_to_stream(Tick(n=n))
        if ev.get("fail"):
            raise RuntimeError("the counter jammed")
        return StopEvent(result="counted 3")


def test_a_workflow_shows_its_drawing() -> None:
    bundle = Counter()._repr_mimebundle_()
    assert bundle["text/html"].startswith('<div class="batonflow-drawing"><iframe sandbox')
    assert "count" in bundle["text/html"] and "&lt;svg" in bundle["text/html"]
    assert bundle["text/plain"].startswith("<")


async def test_a_run_shows_its_status_result_or_error() -> None:
    handler = Counter().run()
    assert "running" in handler._repr_mimebundle_()["text/html"]
    await handler
    done = handler._repr_mimebundle_()["text/html"]
    assert "completed" in done and "counted 3" in done and "what it ran" in done
    failed = Counter().run(fail=True)
    with pytest.raises(RuntimeError):
        await failed
    shown = failed._repr_mimebundle_()["text/html"]
    assert "failed" in shown and "RuntimeError: the counter jammed" in shown


def test_drawings_are_strings_that_show_as_drawings(tmp_path) -> None:
    page = draw_all_possible_flows(Counter, filename=str(tmp_path / "c.html"))
    assert isinstance(page, Drawing) and isinstance(page, str)
    assert page == (tmp_path / "c.html").read_text()
    assert "<iframe sandbox" in page._repr_html_()

    class Printer:
        def __init__(self) -> None:
            self.out = ""

        def text(self, s: str) -> None:
            self.out += s

    printer = Printer()
    page._repr_pretty_(printer, False)
    assert printer.out.startswith("<Drawing: an HTML page of") and "DOCTYPE" not in printer.out
    mermaid = draw_all_possible_flows_mermaid(Counter, filename=None)
    assert isinstance(mermaid, MermaidText)
    assert mermaid._repr_markdown_().startswith("```mermaid\nflowchart")


def test_a_drawing_already_shown_is_not_shown_twice() -> None:
    shown = Drawing("<!DOCTYPE html><p>x</p>", shown=True)
    assert shown._repr_html_() is None


async def test_watch_prints_lines_outside_a_notebook(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "IPython.display", None)  # no IPython
    assert await watch(Counter().run()) == "counted 3"
    assert capsys.readouterr().out.splitlines() == [
        "Tick(n=0)",
        "Tick(n=1)",
        "Tick(n=2)",
        "result: counted 3",
    ]
    with pytest.raises(RuntimeError, match="jammed"):
        await watch(Counter().run(fail=True))
    assert capsys.readouterr().out.splitlines()[-1] == "error: RuntimeError: the counter jammed"


async def test_watch_refuses_what_is_not_a_handler() -> None:
    with pytest.raises(TypeError, match=r"call it as `await watch\(workflow.run\(...\)\)`"):
        await watch(Counter())  # type: ignore[arg-type]
