"""Multilingual tokenization: CJK bigrams, per-script stemming, pluggable, and hit@3 per language."""

from __future__ import annotations

import re

import pytest
from batonflow.rag import QdrantStore, RAGWorkflow
from batonflow.rag.sparse import BM25SparseEncoder
from batonflow.rag.store import chunks_of
from batonflow.rag.tokenize import MultilingualTokenizer, cjk_bigrams
from corpora import EN_DOCS, EN_QUERIES, ZH_DOCS, ZH_QUERIES, hit_at_k


def test_cjk_runs_become_overlapping_bigrams() -> None:
    """Chinese, Japanese and Korean runs give character bigrams; a lone character stays whole."""
    tok = MultilingualTokenizer()
    assert tok("为什么天空是蓝色") == ["为什", "什么", "么天", "天空", "空是", "是蓝", "蓝色"]
    assert tok("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tok("한국어") == ["한국", "국어"]
    assert cjk_bigrams("的") == ["的"]


def test_mixed_text_keeps_words_stemmed_and_widths_folded() -> None:
    """Latin words in CJK text are stemmed; full-width letters match their ASCII forms."""
    tok = MultilingualTokenizer()
    assert tok("Workflows 的 Context，ｃｔｘ．ｓｔｏｒｅ") == [
        "workflow",
        "的",
        "context",
        "ctx",
        "store",
    ]


def test_other_scripts_use_their_own_stemmer() -> None:
    """Cyrillic words are stemmed as Russian while Latin ones use the given language."""
    tok = MultilingualTokenizer()
    assert tok("собаки бегали") == ["собак", "бега"]
    assert MultilingualTokenizer(script_languages=False)("собаки") == ["собаки"]
    assert MultilingualTokenizer("german")("die Häuser") == ["die", "haus"]


def test_unknown_script_language_is_a_clear_error() -> None:
    """A script mapped to a language PyStemmer lacks is refused with the choices."""
    with pytest.raises(ValueError, match="Unknown stemmer language 'elvish'.*language=None"):
        MultilingualTokenizer(script_languages={(0x0400, 0x04FF): "elvish"})


def test_tokenizer_is_pluggable() -> None:
    """Any callable text -> terms replaces the default, for documents and queries alike."""
    enc = BM25SparseEncoder(tokenizer=lambda text: text.split("|"))
    assert enc.tokenize("天空|蓝色") == ["天空", "蓝色"]
    with QdrantStore(location=":memory:", encoder=enc) as store:
        store.upsert(chunks_of("a", ["天空|蓝色", "大海|绿色"]))
        assert store.query("蓝色")[0].text == "天空|蓝色"
    with pytest.raises(ValueError, match="tokenizer= got int; pass a callable"):
        BM25SparseEncoder(tokenizer=3)  # type: ignore[arg-type]


def _hit_at_3(encoder: BM25SparseEncoder, docs: dict[str, str], queries) -> float:
    with QdrantStore(location=":memory:", encoder=encoder) as store:
        for source, text in docs.items():
            store.upsert(chunks_of(source, [text]))
        found = [[h.source for h in store.query(q, top_k=3)] for q, _ in queries]
    return hit_at_k(found, [want for _, want in queries])


def test_chinese_corpus_is_found_with_bigrams_and_not_with_words() -> None:
    """hit@3 on the Chinese corpus is 1.0; splitting on \\w+ alone (the old way) finds almost nothing."""
    assert _hit_at_3(BM25SparseEncoder(), ZH_DOCS, ZH_QUERIES) == 1.0
    words_only = BM25SparseEncoder(tokenizer=lambda t: re.findall(r"\w+", t.lower()))
    assert _hit_at_3(words_only, ZH_DOCS, ZH_QUERIES) < 0.2


def test_english_corpus_hit_at_3() -> None:
    """The same questions in English find their documents too."""
    assert _hit_at_3(BM25SparseEncoder(), EN_DOCS, EN_QUERIES) == 1.0


async def test_chinese_question_gets_a_cited_chinese_answer() -> None:
    """A Chinese question is answered extractively from the right Chinese sentence."""
    with QdrantStore(location=":memory:") as store:
        store.upsert(
            chunks_of("sky.md", ["天空是蓝色的，因为空气把蓝光散射得更多。晚霞是红色的。"])
        )
        store.upsert(chunks_of("sea.md", ["大海看起来是蓝色的，因为水吸收红光。"]))
        response = await RAGWorkflow(store=store).run(query="为什么天空是蓝色")
    assert response.sources[0].metadata["source"] == "sky.md"
    assert response.answer.splitlines()[1] == "- 天空是蓝色的，因为空气把蓝光散射得更多。 [1]"
