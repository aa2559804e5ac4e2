"""Drawing workflows: Mermaid text and self-contained HTML pages (batonflow.core.drawing)."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from batonflow.core.drawing import (
    draw_all_possible_flows,
    draw_all_possible_flows_mermaid,
    draw_most_recent_execution,
    draw_most_recent_execution_mermaid,
)
from batonflow.core.events import (
    StopEvent,
)
from batonflow.core.representation import get_workflow_representation
from drawing_flows import AskFlow, JokeEvent, JokeFlow, RetryFlow


class Page(HTMLParser):
    """Collects what a browser would fetch or show from a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.texts: list[str] = []
        self.stack: list[str] = []
        self.titles: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.stack.append(tag)
        self.attrs.extend((tag, k, v or "") for k, v in attrs)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend((tag, k, v or "") for k, v in attrs)

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data):
        self.texts.append(data)
        if self.stack and self.stack[-1] == "title":
            self.titles.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def svg_texts(page: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", page)


# -- Mermaid ----------------------------------------------------------------------------------


def test_mermaid_lists_steps_events_and_edges():
    """The flowchart has a node per step/event and an arrow per accept/emit."""
    text = draw_all_possible_flows_mermaid(JokeFlow, filename=None)
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    step_generate_joke["generate_joke"]' in lines
    assert '    event_StartEvent(["StartEvent"])' in lines
    for edge in (
        "event_StartEvent --> step_generate_joke",
        "step_generate_joke --> event_JokeEvent",
        "event_JokeEvent --> step_critique_joke",
        "step_critique_joke --> event_StopEvent",
    ):
        assert f"    {edge}" in lines
    assert "    class event_StartEvent start" in lines
    assert "    class event_StopEvent stop" in lines


def test_mermaid_shows_external_node_for_human_in_the_loop():
    """InputRequiredEvent and HumanResponseEvent connect through a hexagon 'external' node."""
    text = draw_all_possible_flows_mermaid(AskFlow, filename=None)
    assert '    external{{"external"}}' in text.splitlines()
    assert "event_InputRequiredEvent --> external" in text
    assert "external --> event_HumanResponseEvent" in text


def test_mermaid_files_by_extension(tmp_path):
    """.mmd gets the bare text, .md the text inside a mermaid fence."""
    text = draw_all_possible_flows_mermaid(JokeFlow, filename=tmp_path / "flow.mmd")
    assert (tmp_path / "flow.mmd").read_text() == text
    draw_all_possible_flows_mermaid(JokeFlow, filename=str(tmp_path / "flow.md"))
    assert (tmp_path / "flow.md").read_text() == f"```mermaid\n{text}```\n"


@pytest.mark.parametrize("name", ["flow.mermaid", "flow.html", "flow"])
def test_mermaid_writes_any_file_name(tmp_path, name, capsys):
    """A mermaid function writes its text under any name, as LlamaIndex's, printing nothing."""
    text = draw_all_possible_flows_mermaid(JokeFlow, filename=tmp_path / name)
    assert (tmp_path / name).read_text() == text
    assert capsys.readouterr().out == ""


def test_mermaid_default_file_names_are_llama_indexs(tmp_path, monkeypatch):
    """Without filename, the Mermaid text goes to workflow_all_flows.mermaid."""
    monkeypatch.chdir(tmp_path)
    text = draw_all_possible_flows_mermaid(JokeFlow)
    assert (tmp_path / "workflow_all_flows.mermaid").read_text() == text


def test_mermaid_truncates_labels():
    """max_label_length cuts labels and marks the cut with an ellipsis."""
    text = draw_all_possible_flows_mermaid(JokeFlow, filename=None, max_label_length=8)
    assert '["generat…"]' in text
    assert "generate_joke" not in text.split("\n", 1)[1].replace("step_generate_joke", "")


def test_mermaid_escapes_quotes_in_labels():
    """A quote in a label cannot end the Mermaid string early."""
    from batonflow.core.drawing import to_mermaid
    from batonflow.core.representation import WorkflowGenericNode, WorkflowGraph

    graph = WorkflowGraph("G", (WorkflowGenericNode("n", 'say "hi"'),), ())
    assert '["say #quot;hi#quot;"]' in to_mermaid(graph)


# -- HTML -----------------------------------------------------------------------------------


def test_html_page_is_self_contained(tmp_path):
    """No script, stylesheet, image or font is fetched: only the SVG namespace names a URL."""
    path = tmp_path / "flow.html"
    page = draw_all_possible_flows(RetryFlow, filename=path)
    assert path.read_text() == page
    parsed = parse(page)
    assert parsed.tags[0] == "html"
    assert "script" not in parsed.tags and "link" not in parsed.tags and "img" not in parsed.tags
    urls = [(tag, k, v) for tag, k, v in parsed.attrs if "://" in v]
    assert urls == [("svg", "xmlns", "http://www.w3.org/2000/svg")]
    assert page.count("http://") == 1 and "https://" not in page
    assert "@import" not in page and "url(" not in page.replace("url(#arrow", "")


def test_html_shows_every_step_and_event():
    """Each step and event name is a text of the drawing, with a legend."""
    page = draw_all_possible_flows(RetryFlow, filename=None)
    texts = svg_texts(page)
    for name in ("attempt", "finish", "never_runs", "StartEvent", "RetryEvent", "StopEvent"):
        assert name in texts
    assert "Legend" in page and "Start event" in page and "Stop event" in page
    assert "Tries three times, then stops." in page


def test_html_marks_node_kinds_with_their_own_classes():
    """Start, stop, step, HITL event and external nodes are told apart in the markup."""
    page = draw_all_possible_flows(AskFlow, filename=None)
    for kind in ("start", "stop", "step", "hitl", "external"):
        assert f'class="node {kind}"' in page
    assert "<polygon" in page  # the external node is a hexagon


def test_html_loop_edge_is_drawn(tmp_path):
    """The RetryEvent -> attempt loop is an edge of the drawing."""
    page = draw_all_possible_flows(RetryFlow, filename=None)
    titles = parse(page).titles
    assert "RetryEvent → attempt" in titles
    assert "attempt → RetryEvent" in titles


def test_html_truncates_labels_but_keeps_full_names_in_tooltips():
    """Cut labels end in an ellipsis; the <title> tooltip has the full step name."""
    page = draw_all_possible_flows(JokeFlow, filename=None, max_label_length=6)
    texts = svg_texts(page)
    assert "gener…" in texts and "generate_joke" not in texts
    assert any("generate_joke" in t for t in parse(page).titles)


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        pytest.param("flow.html", "<!DOCTYPE html>", id="html"),
        pytest.param("flow.HTM", "<!DOCTYPE html>", id="htm-uppercase"),
        pytest.param("flow.mmd", "flowchart TD", id="mmd"),
        pytest.param("flow.md", "```mermaid\nflowchart TD", id="md"),
    ],
)
def test_extension_picks_the_format(tmp_path, name, marker):
    """The filename's extension decides between an HTML page and Mermaid text."""
    draw_all_possible_flows(JokeFlow, filename=tmp_path / name)
    assert (tmp_path / name).read_text().startswith(marker)


@pytest.mark.parametrize("name", ["flow.png", "flow", "flow.svg"])
def test_any_other_name_gets_a_page_and_its_name_printed(tmp_path, name, capsys):
    """As LlamaIndex's pyvis drawing: any file name gets the page, and the name is printed."""
    draw_all_possible_flows(JokeFlow, filename=tmp_path / name)
    assert (tmp_path / name).read_text().startswith("<!DOCTYPE html>")
    assert capsys.readouterr().out == f"{tmp_path / name}\n"


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_max_label_length_is_rejected(bad):
    """max_label_length must be a positive int."""
    with pytest.raises(ValueError, match="pass None to keep labels whole"):
        draw_all_possible_flows(JokeFlow, filename=None, max_label_length=bad)


def test_default_filename_is_written_in_the_current_folder(tmp_path, monkeypatch):
    """Without filename the page goes to workflow_all_flows.html."""
    monkeypatch.chdir(tmp_path)
    draw_all_possible_flows(JokeFlow)
    assert (tmp_path / "workflow_all_flows.html").read_text().startswith("<!DOCTYPE html>")


def test_a_graph_can_be_drawn_directly():
    """A WorkflowGraph (e.g. from JSON) draws like its workflow."""
    graph = get_workflow_representation(JokeFlow)
    assert draw_all_possible_flows(graph, filename=None) == draw_all_possible_flows(
        JokeFlow, filename=None
    )


def test_notebook_flag_without_ipython_still_writes(tmp_path):
    """notebook=True outside Jupyter just writes the file."""
    draw_all_possible_flows(JokeFlow, filename=tmp_path / "f.html", notebook=True)
    assert (tmp_path / "f.html").exists()


def test_non_workflow_is_rejected():
    """Drawing something that is not a workflow names what to pass."""
    with pytest.raises(TypeError, match="pass the workflow class"):
        draw_all_possible_flows(42, filename=None)


# -- most recent execution ----------------------------------------------------------------


def test_recent_execution_before_any_run_is_a_clear_error():
    """Drawing the recent execution of a workflow that never ran says what to do."""
    with pytest.raises(ValueError, match="has not run yet.*draw_all_possible_flows"):
        draw_most_recent_execution(JokeFlow(), filename=None)


def test_recent_execution_of_a_class_is_a_clear_error():
    """A class has no runs: the error asks for the handler or the instance."""
    with pytest.raises(TypeError, match="pass the WorkflowHandler returned by w.run"):
        draw_most_recent_execution_mermaid(JokeFlow, filename=None)


def test_recent_execution_of_a_workflow_that_never_ran_writes_nothing(tmp_path, capsys):
    """Nothing to draw: a ValueError, no file, no printed name."""
    with pytest.raises(ValueError, match="has not run yet"):
        draw_most_recent_execution(JokeFlow(), filename=tmp_path / "x.txt")
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr().out == ""


def test_drawn_files_are_utf8(tmp_path):
    """Pages and Mermaid files are written as UTF-8 (labels use × and …)."""
    draw_all_possible_flows(JokeFlow, filename=tmp_path / "a.html", max_label_length=4)
    Path(tmp_path / "a.html").read_bytes().decode("utf-8")
    assert '<meta charset="utf-8">' in (tmp_path / "a.html").read_text(encoding="utf-8")


def test_a_recorded_trace_draws_without_the_workflow():
    """A graph plus (step, input, outputs) name tuples draws an execution, e.g. from storage."""
    from batonflow.core.drawing import as_step_runs, to_mermaid

    graph = get_workflow_representation(JokeFlow)
    trace = [
        ("generate_joke", "StartEvent", ["JokeEvent"]),
        ("critique_joke", JokeEvent, (StopEvent,)),
    ]
    text = to_mermaid(graph, as_step_runs(trace))
    assert 'event_StartEvent -->|"#1"| step_generate_joke' in text
    assert 'event_JokeEvent -->|"#2"| step_critique_joke' in text
    assert "step_critique_joke --> event_StopEvent" in text


def test_filtered_graph_with_self_loop_draws(tmp_path):
    """A steps-only graph (a loop becomes a self-loop) draws as HTML and Mermaid."""
    graph = get_workflow_representation(RetryFlow).filter_by_node_type("event")
    page = draw_all_possible_flows(graph, filename=None)
    assert "attempt → attempt" in parse(page).titles
    assert "step_attempt --> step_attempt" in draw_all_possible_flows_mermaid(graph, filename=None)


def test_drawing_signatures_are_llama_indexs():
    """Parameter names and default file names are llama-index-utils-workflow's, so calls
    written for it (``workflow=``, ``handler=``, no filename) work unchanged."""
    import inspect

    from batonflow.core import drawing

    expected = {
        "draw_all_possible_flows": (
            ["workflow", "filename", "notebook", "max_label_length", "include_child_workflows"],
            "workflow_all_flows.html",
        ),
        "draw_all_possible_flows_mermaid": (
            ["workflow", "filename", "max_label_length", "include_child_workflows"],
            "workflow_all_flows.mermaid",
        ),
        "draw_most_recent_execution": (
            ["handler", "filename", "notebook", "max_label_length"],
            "workflow_recent_execution.html",
        ),
        "draw_most_recent_execution_mermaid": (
            ["handler", "filename", "max_label_length"],
            "workflow_recent_execution.mermaid",
        ),
    }
    for name, (params, default) in expected.items():
        signature = inspect.signature(getattr(drawing, name))
        assert list(signature.parameters) == params, name
        assert signature.parameters["filename"].default == default, name
