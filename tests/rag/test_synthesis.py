"""The extractive answer and the LLM prompt, on hand-made passages."""

from __future__ import annotations

from batonflow.rag.synthesis import build_messages, extractive_answer, nothing_found
from llama_index.core.schema import NodeWithScore, TextNode


def _nodes(*texts: str) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=f"n{i}", text=t, metadata={"file_name": f"f{i}.md"}), score=1.0
        )
        for i, t in enumerate(texts)
    ]


def test_extractive_joins_wrapped_lines_and_skips_headings() -> None:
    """A sentence wrapped over lines is quoted whole; Markdown headings are not quoted."""
    text = "# Oil\n\nChange the engine oil\nevery 8000 km. Wash the car weekly.\n"
    answer = extractive_answer("when to change engine oil", _nodes(text))
    assert answer == "From the indexed documents:\n- Change the engine oil every 8000 km. [1]"


def test_extractive_quotes_weak_sources_only_when_they_match_well() -> None:
    """Later passages are quoted only when their best sentence matches at least half as well."""
    nodes = _nodes(
        "Qdrant stores vectors in a local folder by default.",
        "A folder is a directory.",  # 1 word of 4: dropped
        "Vectors live in a local Qdrant folder.",  # 4 words: kept
    )
    answer = extractive_answer("qdrant vectors local folder", nodes)
    assert answer.splitlines()[1:] == [
        "- Qdrant stores vectors in a local folder by default. [1]",
        "- Vectors live in a local Qdrant folder. [3]",
    ]


def test_extractive_always_quotes_the_best_passage() -> None:
    """A semantic match sharing no word with the query is still quoted, first sentence."""
    answer = extractive_answer("automobile upkeep", _nodes("Change the oil. Check the tyres."))
    assert answer.endswith("- Change the oil. [1]")
    assert extractive_answer("x", []) == nothing_found("x")


def test_prompt_numbers_sources_and_states_the_rules() -> None:
    """The LLM sees numbered, named sources, the question, and the citation rules."""
    system, user = build_messages("what?", _nodes("Alpha.", "Beta."))
    assert "[1]" in system.content and "never make up" in system.content
    assert (
        user.content
        == "Sources:\n\n[1] f0.md\nAlpha.\n\n[2] f1.md\nBeta.\n\nQuestion: what?\nAnswer:"
    )
