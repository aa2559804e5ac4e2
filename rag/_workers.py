"""Ingestion's worker processes: reading and splitting files, and embedding, on every core.

``IngestionWorkflow(num_workers=N)`` starts ``N`` processes (spawned, so a worker never
inherits the threads of the parent's engine) with the splitter, the embedding model and what
the collection holds of each source, sent once. The ``load`` step then hands each batch of
files (or documents) to a worker, which reads, hashes, decides and splits exactly as the
process itself would (the same functions: :func:`~.loading.content_hashes`, :meth:`Plan.decide
<._ingest_run.Plan.decide>`, :func:`~.loading.split_documents`), and sends back the hashes, the
skipped files and the chunks of the sources to write. ``embed_and_store`` has a worker embed
each batch when the model can be sent to another process (it pickles); the store's writes stay
in this process, which owns the collection.

A few batches are in flight per worker, their results taken in the order they were sent, so
the report, the progress and the chunks are those of an ingestion without workers.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from .chunks import StoredSource
from .errors import RAGConfigError
from .files import FileSelection, SkippedFile, read_files
from .loading import PendingChunk, content_hashes, pipeline_of, source_of, split_documents

log = logging.getLogger(__name__)

#: The folder size from which ``num_workers=None`` starts worker processes (on a machine with
#: AUTO_MIN_CORES cores or more): below it, starting them (each imports llama-index) costs more than
#: they save.
AUTO_MIN_FILES = 200
#: ``num_workers=None`` starts workers only on a machine with at least this many cores. This
#: process keeps storing while they work, so on two cores the workers and the store share them:
#: measured on 2 cores (bench/ingest_bench.py, 2026-12-02, a quiet machine) two workers were
#: 2.4x slower than none at 1,560 chunks (their start-up) and even at 15,875.
AUTO_MIN_CORES = 3

#: What one worker sends back for a batch: the sources' hashes, the files read, the files
#: skipped, how many documents it split and the chunks of the sources to write.
Parsed = tuple[dict[str, str], list[str], list[SkippedFile], int, list[PendingChunk]]

# The worker process's settings, set once by _start.
_SETTINGS: dict[str, Any] = {}


def cores() -> int:
    """How many cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers_for(num_workers: int | None, files: int) -> int:
    """The worker processes to start for ``num_workers=`` and a run reading ``files`` files.

    Raises:
        RAGConfigError: ``num_workers`` is negative.
    """
    if num_workers is None:
        many = cores()
        return many if many >= AUTO_MIN_CORES and files >= AUTO_MIN_FILES else 0
    return num_workers


def check_num_workers(num_workers: int | None) -> None:
    """Raise a clear error for a ``num_workers=`` that is not ``None`` or a count."""
    if num_workers is not None and (
        isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0
    ):
        raise RAGConfigError(
            f"num_workers must be None (worker processes for large folders), 0 (none) or a "
            f"number of processes, got {num_workers!r}."
        )


def _start(settings: bytes) -> None:
    # A pickled splitter holds its tokenizer as tiktoken's encoding by name, which unpickles
    # by loading that encoding: load it first the way llama-index does (from the copy it
    # ships, no download), then unpickle the settings.
    from llama_index.core.utils import get_tokenizer

    get_tokenizer()
    _SETTINGS.update(pickle.loads(settings))


def _changed(hashes: Mapping[str, str]) -> set[str]:
    from ._ingest_run import Plan

    return Plan(_SETTINGS["stored"], _SETTINGS["force"]).decide(hashes)


def parse(files: Sequence[Path] = (), documents: Sequence[Any] = ()) -> Parsed:
    """In a worker: read ``files`` (or take ``documents``), hash, decide and split them."""
    read: list[str] = []
    skipped: list[SkippedFile] = []
    docs = list(documents)
    if files:
        docs, read, skipped = read_files(list(files), _SETTINGS["selection"])
    transformations = _SETTINGS["transformations"]
    hashes = content_hashes(docs, transformations, pipeline=_SETTINGS["pipeline"])
    changed = _changed(hashes)
    todo = [d for d in docs if source_of(d) in changed]
    pending = split_documents(todo, transformations, hashes) if todo else []
    return hashes, read, skipped, len(todo), pending


def embed(texts: list[str]) -> list[list[float]]:
    """In a worker: the embeddings of ``texts`` by the run's model."""
    return list(_SETTINGS["embed_model"].get_text_embedding_batch(texts))


class _Quiet(logging.Filter):
    # llama-index logs a warning per unpicklable cached attribute of a component it pickles
    # (the splitter's tokenizer functions), which it rebuilds on the other side.
    def filter(self, record: logging.LogRecord) -> bool:
        return "unpickleable private attribute" not in record.getMessage()


def _pickled(value: Any) -> bytes | None:
    quiet = _Quiet()
    logging.getLogger().addFilter(quiet)
    try:
        return pickle.dumps(value)
    except Exception:  # any error of any object's __reduce__: it does not travel
        return None
    finally:
        logging.getLogger().removeFilter(quiet)


class Workers:
    """A run's worker processes (see the module docs)."""

    #: The workers of each run in flight, by its context (for the embedding step).
    of_run: weakref.WeakKeyDictionary[Any, Workers] = weakref.WeakKeyDictionary()

    def __init__(
        self,
        count: int,
        transformations: list[Any],
        embed_model: Any,
        selection: FileSelection,
        stored: Mapping[str, StoredSource],
        force: bool,
    ) -> None:
        settings = {
            "transformations": transformations,
            "pipeline": pipeline_of(transformations, embed_model),
            "selection": selection,
            "stored": dict(stored),
            "force": force,
        }
        if _pickled(settings) is None:
            raise RAGConfigError(
                "num_workers= needs a splitter (and file_extractor= readers) that can be sent "
                "to another process (pickled), and these cannot; pass num_workers=0 to read "
                "and split in this process."
            )
        self.embeds = embed_model is not None and _pickled(embed_model) is not None
        if embed_model is not None and not self.embeds:
            log.info("%s does not pickle: embedding in this process", type(embed_model).__name__)
        blob = _pickled({**settings, "embed_model": embed_model if self.embeds else None})
        self.count = count
        self.pool = ProcessPoolExecutor(
            count,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(blob,),
        )

    def parse(self, files: Sequence[Path] = (), documents: Sequence[Any] = ()) -> Future[Parsed]:
        """Send one batch of files or documents to a worker."""
        return self.pool.submit(parse, list(files), list(documents))

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` in a worker."""
        return await asyncio.wrap_future(self.pool.submit(embed, texts))

    def close(self) -> None:
        """Stop the processes (without waiting for them)."""
        self.pool.shutdown(wait=False, cancel_futures=True)


__all__ = [
    "AUTO_MIN_CORES",
    "AUTO_MIN_FILES",
    "Parsed",
    "Workers",
    "check_num_workers",
    "cores",
    "embed",
    "parse",
    "workers_for",
]
