"""QdrantStore: local (memory and folder) Qdrant, stable ids, replacement, hybrid, errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from batonflow.core.errors import BatonflowError
from batonflow.rag.errors import StoreConfigError, StoreLockedError, StoreUnavailableError
from batonflow.rag.store import Chunk, QdrantStore, chunks_of, point_id
from qdrant_client import QdrantClient, models
from rag_helpers import CORPUS, ConceptEmbedding


def _fill(store: QdrantStore, embed: ConceptEmbedding | None = None) -> None:
    for name, text in CORPUS.items():
        dense = embed.get_text_embedding(text) if embed else None
        store.replace_source(name, [Chunk(text=text, source=name, index=0, dense=dense)])


@pytest.fixture(params=["memory", "path", "client"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        s = QdrantStore(location=":memory:")
    elif request.param == "path":
        s = QdrantStore(path=tmp_path / "qdrant")
    else:
        s = QdrantStore(client=QdrantClient(location=":memory:"))
    yield s
    s.close()


@pytest.mark.parametrize(
    ("query", "source"),
    [
        pytest.param("engine oil", "cars.md", id="engine-oil"),
        pytest.param("when do puppies get vaccinations?", "dogs.txt", id="stemmed-plural"),
        pytest.param("where does local mode store the collection", "qdrant.md", id="qdrant"),
        pytest.param("how are events passed between steps", "workflow.md", id="events"),
        pytest.param("how long should the dough rise", "bread.txt", id="bread"),
    ],
)
def test_keyword_query_ranks_the_right_source_first(
    store: QdrantStore, query: str, source: str
) -> None:
    """Sparse BM25 finds the chunk that shares the query's (stemmed) words, first."""
    _fill(store)
    hits = store.query(query, top_k=3)
    assert hits[0].source == source
    assert hits[0].text == CORPUS[source]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rewriting_the_same_chunks_never_duplicates(store: QdrantStore) -> None:
    """Writing a source twice leaves one point per chunk: ids come from path, index and content."""
    _fill(store)
    _fill(store)
    assert store.count() == len(CORPUS)
    assert store.count("cars.md") == 1


def test_replace_source_removes_only_that_sources_stale_chunks(store: QdrantStore) -> None:
    """A changed document's old chunks go away; other sources are untouched."""
    _fill(store)
    new = chunks_of("cars.md", ["Rotate the tyres.", "Wash the car.", "Check the brakes."])
    removed = store.replace_source("cars.md", new)
    assert removed == 1
    assert store.count("cars.md") == 3
    assert store.count() == len(CORPUS) + 2
    assert store.query("engine oil kilometres") == []
    assert store.query("brakes")[0].id == new[2].id
    assert store.delete_source("cars.md") == 3
    assert store.count() == len(CORPUS) - 1


def test_point_ids_are_stable_and_content_addressed() -> None:
    """The same (source, index, text) gives the same id; changing any part changes it."""
    a = point_id("a.md", 0, "hello")
    assert a == point_id("a.md", 0, "hello")
    assert (
        len(
            {
                a,
                point_id("b.md", 0, "hello"),
                point_id("a.md", 1, "hello"),
                point_id("a.md", 0, "hello!"),
            }
        )
        == 4
    )


def test_upserts_are_batched() -> None:
    """Points go to Qdrant in batches of batch_size, not one request per point."""
    store = QdrantStore(client=QdrantClient(location=":memory:"), batch_size=2)
    sizes: list[int] = []
    real = store.client.upsert

    def spy(collection_name: str, points: list, **kw):
        sizes.append(len(points))
        return real(collection_name, points=points, **kw)

    store.client.upsert = spy  # type: ignore[method-assign]
    store.upsert(chunks_of("s", [f"text number {i}" for i in range(5)]))
    assert sizes == [2, 2, 1]
    assert store.count() == 5


def test_folder_store_persists_across_reopen(tmp_path: Path) -> None:
    """Chunks written to a folder are there when a new store opens it."""
    with QdrantStore(path=tmp_path / "q") as s:
        _fill(s)
    with QdrantStore(path=tmp_path / "q") as s:
        assert s.count() == len(CORPUS)
        assert s.query("dough")[0].source == "bread.txt"


def test_collection_has_sparse_idf_vectors(client_store: QdrantStore) -> None:
    """The collection is created on first write with a sparse vector that applies IDF."""
    assert client_store.count() == 0
    assert not client_store.client.collection_exists("docs")
    assert not client_store.exists()
    _fill(client_store)
    assert client_store.exists() and client_store.collections() == ["docs"]
    params = client_store.client.get_collection("docs").config.params
    assert params.sparse_vectors["sparse"].modifier == models.Modifier.IDF
    assert params.vectors == {}


def test_embedded_store_runs_on_qdrant_edge(tmp_path: Path) -> None:
    """A folder or memory store uses Qdrant Edge; it has no QdrantClient and says what to do."""
    with QdrantStore(path=tmp_path / "q") as store:
        assert store.engine == "edge"
        _fill(store)
        assert store.collections() == ["docs"]
        assert (tmp_path / "q" / "docs" / "edge_config.json").exists()
        with pytest.raises(StoreConfigError, match=r"no QdrantClient; pass client=QdrantClient"):
            store.client


def test_folder_of_qdrant_client_local_mode_stays_on_qdrant_client(tmp_path: Path) -> None:
    """A folder holding qdrant-client local-mode data (an earlier version's) is still read."""
    with QdrantStore(client=QdrantClient(path=str(tmp_path / "old"))) as old:
        _fill(old)
        old.client.close()
    with QdrantStore(path=tmp_path / "old") as store:
        assert store.engine == "client"
        assert store.query("dough")[0].source == "bread.txt"


def test_idf_makes_rare_terms_count_more(memory_store: QdrantStore) -> None:
    """A term found in every chunk weighs less than a rare one (Qdrant's IDF modifier)."""
    memory_store.upsert(chunks_of("a", ["common rare", "common", "common", "common"]))
    memory_store.upsert(chunks_of("b", ["common other"]))
    hits = memory_store.query("common rare")
    assert hits[0].text == "common rare"
    assert hits[1].score < hits[0].score / 2


def test_query_finds_nothing_without_collection_or_words(memory_store: QdrantStore) -> None:
    """A missing collection, an all-stopword query and an unknown word find nothing."""
    assert memory_store.query("engine oil") == []
    _fill(memory_store)
    assert memory_store.query("what is the") == []
    assert memory_store.query("zeppelin") == []


def test_locked_folder_in_same_process_is_a_clear_error(tmp_path: Path) -> None:
    """A second store on an open folder says what to do instead."""
    with QdrantStore(path=tmp_path / "q"):
        with pytest.raises(StoreLockedError, match=r"already open.*use another path=.*url="):
            QdrantStore(path=tmp_path / "q")
    QdrantStore(path=tmp_path / "q").close()  # closing released it


def test_locked_folder_held_by_another_process(tmp_path: Path) -> None:
    """A folder opened by another process gives StoreLockedError (also a RuntimeError)."""
    folder = tmp_path / "q"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from qdrant_client import QdrantClient  # any client holding the folder, not just ours
            client = QdrantClient(path={str(folder)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(RuntimeError, match="is already open in another process") as info:
            QdrantStore(path=folder)
        assert isinstance(info.value, StoreLockedError)
        assert isinstance(info.value, BatonflowError)
    finally:
        holder.communicate("", timeout=30)


def test_embedded_folder_held_by_another_process(tmp_path: Path) -> None:
    """A folder another process's QdrantStore holds gives StoreLockedError, until it closes."""
    folder = tmp_path / "q"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from batonflow.rag import QdrantStore
            store = QdrantStore(path={str(folder)!r})
            print("ready", flush=True)
            sys.stdin.read()
            store.close()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="is already open in another process"):
            QdrantStore(path=folder)
    finally:
        holder.communicate("", timeout=30)
    QdrantStore(path=folder).close()


def test_only_one_place_may_be_given(tmp_path: Path) -> None:
    """path= with url= is refused, naming both."""
    with pytest.raises(StoreConfigError, match="got path and url; give only one of"):
        QdrantStore(path=tmp_path, url="http://127.0.0.1:6333")
    with pytest.raises(StoreConfigError, match="batch_size must be at least 1"):
        QdrantStore(location=":memory:", batch_size=0)


def test_dense_vectors_must_match_the_collection(memory_store: QdrantStore) -> None:
    """Adding dense vectors to a sparse-only collection, or the wrong size, is refused."""
    _fill(memory_store)
    with pytest.raises(StoreConfigError, match="holds no dense vectors.*new collection="):
        memory_store.upsert([Chunk("x", "x", 0, dense=[1.0, 0.0])])
    dense = QdrantStore(location=":memory:", collection="dense")
    dense.upsert([Chunk("x", "x", 0, dense=[1.0, 0.0])])
    with pytest.raises(
        StoreConfigError,
        match="dense vectors of size 2, but this ingestion has dense vectors of size 3",
    ):
        dense.upsert([Chunk("y", "y", 0, dense=[1.0, 0.0, 0.0])])
    with pytest.raises(StoreConfigError, match="query embedding has 3 dimensions"):
        dense.query("x", dense=[1.0, 0.0, 0.0])
    with pytest.raises(StoreConfigError, match="embed all of them or none"):
        dense.upsert([Chunk("a", "a", 0, dense=[1.0, 0.0]), Chunk("b", "b", 0)])


def test_collection_without_bm25_needs_an_embedding(client_store: QdrantStore) -> None:
    """A collection with only dense vectors (llama-index's) is searched by embedding, or refused."""
    client_store.client.create_collection(
        "docs", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    client_store.client.upsert(
        "docs", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={"text": "one"})]
    )
    with pytest.raises(StoreConfigError, match="no BM25 sparse vectors.*pass embed_model="):
        client_store.query("one")
    assert client_store.query("one", dense=[1.0, 0.1])[0].text == "one"


def test_hybrid_query_finds_paraphrases_sparse_cannot(memory_store: QdrantStore) -> None:
    """With dense vectors, a query sharing no word with the document still finds it (RRF fusion)."""
    embed = ConceptEmbedding()
    _fill(memory_store, embed)
    assert memory_store.dense_size == 8
    query = "automobile upkeep"
    assert memory_store.query(query) == []  # no shared word: BM25 alone finds nothing
    hits = memory_store.query(query, dense=embed.get_query_embedding(query), top_k=3)
    assert hits[0].source == "cars.md"
    # both lists contribute: a keyword-only hit and a concept-only hit fuse into one ranking
    mixed = "canine vaccinations"
    hits = memory_store.query(mixed, dense=embed.get_query_embedding(mixed), top_k=2)
    assert hits[0].source == "dogs.txt"


async def test_async_methods_run_off_the_event_loop(memory_store: QdrantStore) -> None:
    """aupsert/aquery/acount/aprune do the same as their sync twins."""
    await memory_store.aupsert(chunks_of("a", ["alpha beta", "gamma delta"]))
    assert await memory_store.acount() == 2
    assert (await memory_store.aquery("gamma"))[0].text == "gamma delta"
    assert await memory_store.aprune("a", set()) == 2
    assert await memory_store.acount("a") == 0


@pytest.mark.skipif(
    not os.environ.get("BATONFLOW_TEST_QDRANT_URL"),
    reason="set BATONFLOW_TEST_QDRANT_URL=http://127.0.0.1:6333 to test against a Qdrant server",
)
def test_qdrant_server_by_url() -> None:
    """The same store code works against a Qdrant server (hybrid, replace, count)."""
    url = os.environ["BATONFLOW_TEST_QDRANT_URL"]
    store = QdrantStore(url=url, collection="batonflow_test_store")
    try:
        store.drop()
        embed = ConceptEmbedding()
        _fill(store, embed)
        _fill(store, embed)
        assert store.count() == len(CORPUS)
        assert store.query("engine oil")[0].source == "cars.md"
        q = "automobile upkeep"
        assert store.query(q, dense=embed.get_query_embedding(q))[0].source == "cars.md"
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize("n_sources", [pytest.param(3, id="filtered"), pytest.param(20, id="scan")])
def test_prune_many_removes_only_stale_points_of_named_sources(
    memory_store: QdrantStore, n_sources: int
) -> None:
    """prune_many keeps the listed ids of each named source and leaves other sources alone."""
    for s in range(n_sources):
        memory_store.upsert(chunks_of(f"src{s}", [f"old {s} a", f"old {s} b"]))
    memory_store.upsert(chunks_of("untouched", ["stays here"]))
    keep = {f"src{s}": {chunks_of(f"src{s}", [f"old {s} a"])[0].id} for s in range(n_sources)}
    assert memory_store.prune_many(keep) == n_sources
    assert memory_store.count() == n_sources + 1
    assert memory_store.count("untouched") == 1
    assert memory_store.query("b") == []


def test_unreachable_server_is_a_clear_error() -> None:
    """A server URL nobody answers on gives StoreUnavailableError naming the URL and the fixes."""
    import socket

    with socket.socket() as sock:  # a free local port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # (check_compatibility=False: qdrant-client would warn about it from a background thread)
    client = QdrantClient(url=f"http://127.0.0.1:{port}", timeout=2, check_compatibility=False)
    store = QdrantStore(client=client)
    with pytest.raises(
        StoreUnavailableError,
        match=rf"Could not reach Qdrant at http://127.0.0.1:{port}.*start the server",
    ):
        store.count()
    assert isinstance(StoreUnavailableError("x"), ConnectionError)
    client.close()
