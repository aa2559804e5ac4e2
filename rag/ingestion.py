"""``IngestionWorkflow``: files or documents → chunks → (embeddings) → a Qdrant collection.

::

    store = QdrantStore(path=".batonflow/qdrant")
    report = await IngestionWorkflow(store=store).run(paths=["docs/"])
    print(report.added, report.updated, report.unchanged, report.removed)

Re-ingestion is incremental: each source (a file, or the documents sharing one ``source``) is
hashed with its text, metadata and the splitter and embedding settings; a source whose stored
chunks carry the same hash, and are all there, is skipped (not split, not embedded, not written).
A source an interrupted ingestion left incomplete (some of its chunks written, or a mix of two
versions' chunks) is written again whole and reported as ``repaired``. Files that were ingested
from a folder and are gone from it are removed from the collection. ``run(force=True)``
re-ingests everything.

Which files are read under a folder is :class:`~batonflow.rag.files.FileSelection`
(``required_exts=``, ``file_extractor=``, ``exclude_hidden=``, as llama-index's
``SimpleDirectoryReader``); every file not read is in the report's ``skipped`` with its reason.

Steps: ``load`` reads a few files at a time, compares and splits them (bad files are skipped
and reported) and sends their chunks on in batches as it goes, waiting while eight batches are
not stored yet (so memory holds a few batches, not the folder; :mod:`._ingest_run`);
``embed_and_store`` (up to four batches at once) embeds a batch when an embedding model is set
and upserts it; ``finish`` counts stored batches and, once the plan and all of them are in,
deletes each changed source's chunks left over from its earlier version (those with another
content hash). Progress is streamed as :class:`IngestProgress` events for every phase (files read,
documents split, chunks stored), and drawn as bars with ``run(..., show_progress=True)``.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Collection
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import BaseModel, Field

from . import progress
from ._in_order import InOrder
from ._ingest_run import Plan as _Plan
from ._ingest_run import Sender as _Sender
from ._workers import Workers as _Workers
from ._workers import check_num_workers, workers_for
from .errors import StoreConfigError
from .events import BatchStoredEvent, EmbedBatchEvent, IngestPlanEvent
from .files import FileSelection, SkippedFile, discover, read_files
from .loading import check_transformations, content_hashes, source_of, split_documents
from .store import QdrantStore

#: Files read, and documents split, per worker-thread call (and per progress event).
_READ_BATCH = 16
_SPLIT_BATCH = 32


class IngestionReport(BaseModel):
    """What an ingestion did.

    Attributes:
        files: how many files were read (documents passed directly are not files).
        chunks: how many chunks were stored (of the added and updated sources).
        skipped: the files that were not read, each with the reason.
        added: the sources that were not in the collection before.
        updated: the sources whose content (or splitting/embedding) changed, re-ingested.
        unchanged: the sources skipped because their stored chunks are up to date.
        repaired: the sources an interrupted ingestion had left incomplete (part of their chunks,
            or chunks of two versions), written again whole and their stray chunks deleted.
        removed: the sources deleted because their files are gone from an ingested folder.
        chunks_removed: how many stored chunks were deleted (old versions and removed sources).
    """

    files: int = 0
    chunks: int = 0
    skipped: list[SkippedFile] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    chunks_removed: int = 0
    repaired: list[str] = Field(default_factory=list)


class IngestionWorkflow(Workflow):
    """Ingest files (``paths=``) and/or llama-index documents (``documents=``) into a store.

    Re-ingesting skips unchanged sources and replaces changed ones (see the module docs). A
    file that is binary, not UTF-8, empty or unreadable is skipped, reported, and leaves its
    stored chunks as they were.

    Args:
        store: where the chunks go; a local ``QdrantStore()`` by default.
        embed_model: a llama-index embedding model, to add dense vectors (hybrid retrieval).
        splitter: a llama-index node parser, or a list of transformations (node parsers,
            metadata extractors) applied in order as an ``IngestionPipeline`` would;
            ``SentenceSplitter()`` by default.
        embed_batch_size: chunks per embedding (and store) batch. A source whose chunks span
            several batches is only taken as stored once all of them are (see the module docs).
        required_exts: read only files with these suffixes under the given paths (``""`` for
            files without one); see :mod:`batonflow.rag.files` for the default.
        file_extractor: a llama-index reader per suffix (``{".html": reader}``).
        exclude_hidden: leave out files and folders whose name starts with a dot (reported).
        num_workers: worker processes that read and split files (and embed them, when the
            embedding model pickles), as llama-index's ``IngestionPipeline(num_workers=)``:
            ``None`` (the default) starts one per core for a run reading at least 200 files
            on a machine with three cores or more, and none otherwise; ``0`` never starts any;
            ``N`` starts ``N``. The chunks and the report are the same either way.
        timeout: the run's time limit in seconds (``None``: no limit).
        **kwargs: passed to :class:`~batonflow.core.Workflow`.

    ``run()`` takes ``paths=``, ``documents=``, ``force=True`` (re-ingest everything) and
    ``show_progress=True`` (draw a progress bar per phase on stderr, as llama-index's ingestion
    does).

    Raises:
        RAGConfigError: ``splitter=`` holds something that is not a llama-index transformation,
            ``required_exts`` / ``file_extractor`` are malformed, or ``num_workers`` is not
            ``None`` or a count.
        StoreConfigError: ``embed_batch_size < 1``.
    """

    def __init__(
        self,
        store: QdrantStore | None = None,
        *,
        embed_model: BaseEmbedding | None = None,
        splitter: Any = None,
        embed_batch_size: int = 64,
        timeout: float | None = None,
        required_exts: list[str] | None = None,
        file_extractor: dict[str, Any] | None = None,
        exclude_hidden: bool = True,
        num_workers: int | None = None,
        **kwargs: Any,
    ) -> None:
        check_num_workers(num_workers)
        if embed_batch_size < 1:
            raise StoreConfigError(f"embed_batch_size must be at least 1, got {embed_batch_size}.")
        self.transformations = check_transformations(splitter)
        self.files = FileSelection(
            required_exts=None if required_exts is None else tuple(required_exts),
            file_extractor=file_extractor or {},
            exclude_hidden=exclude_hidden,
        )
        super().__init__(timeout=timeout, **kwargs)
        self.store = store if store is not None else QdrantStore()
        self.embed_model = embed_model
        self.splitter = splitter
        self.embed_batch_size = embed_batch_size
        self.num_workers = num_workers

    @step
    async def load(
        self, ctx: Context, ev: StartEvent
    ) -> IngestPlanEvent | EmbedBatchEvent | StopEvent:
        """Read the inputs a few files at a time, skip unchanged sources, split the rest and
        send their chunks on in batches as they come (at most :data:`MAX_IN_FLIGHT` batches
        wait to be stored, so memory holds a few batches, not the whole folder)."""
        paths, documents = _inputs(ev)
        show = bool(ev.get("show_progress", False))
        force = bool(ev.get("force", False))
        await ctx.store.set("ingest_done", 0)
        await ctx.store.set("ingest_total", 0)
        await ctx.store.set("ingest_stored_batches", 0)
        await ctx.store.set("ingest_show_progress", show)
        found, skipped = await asyncio.to_thread(discover, paths, self.files)
        stored = await self.store.astored_sources()
        plan = _Plan(stored, force)
        sender = _Sender(ctx, self.embed_batch_size, show)
        if found:
            progress.report(ctx, "read", 0, len(found), show=show)
        groups = _source_groups(documents)
        count = workers_for(self.num_workers, len(found))
        InOrder.of_run[ctx] = InOrder()
        if count:
            workers = _Workers(
                count, self.transformations, self.embed_model, self.files, stored, force
            )
            _Workers.of_run[ctx] = workers
            try:
                skipped += await self._load_in_workers(ctx, workers, found, groups, plan, sender)
            except BaseException:
                workers.close()
                raise
        else:
            for start in range(0, len(found), _READ_BATCH):
                batch = found[start : start + _READ_BATCH]
                docs, read, more_skipped = await asyncio.to_thread(read_files, batch, self.files)
                plan.files += len(read)
                skipped += more_skipped
                progress.report(ctx, "read", start + len(batch), len(found), show=show)
                await self._ingest(ctx, docs, plan, sender)
            for group in groups:
                await self._ingest(ctx, group, plan, sender)
        await sender.flush()
        gone = _gone_sources(paths, stored, plan.seen, skipped)
        chunks_removed = await self.store.adelete_sources(gone) if gone else 0
        report = {
            "files": plan.files,
            "skipped": [tuple(s) for s in skipped],
            "added": plan.added,
            "updated": plan.updated,
            "unchanged": plan.unchanged,
            "removed": gone,
            "chunks_removed": chunks_removed,
            "repaired": plan.repaired,
        }
        if not sender.batches:
            # Sources that changed into nothing (all blank chunks) lose their old chunks too.
            report["chunks_removed"] += await self.store.aprune_stale(plan.changed)
            _close_workers(ctx)
            progress.close(ctx)
            return StopEvent(
                result=IngestionReport(**{**report, "skipped": [SkippedFile(*s) for s in skipped]})
            )
        return IngestPlanEvent(
            **report,
            changed=list(plan.changed),
            changed_hashes=plan.changed,
            total_chunks=sender.chunks,
            total_batches=sender.batches,
        )

    async def _ingest(
        self, ctx: Context, docs: list[Document], plan: _Plan, sender: _Sender
    ) -> None:
        """Compare, split and send on one batch of documents (a source's all in it)."""
        if not docs:
            return
        hashes = content_hashes(docs, self.transformations, self.embed_model)
        changed = plan.decide(hashes)
        todo = [d for d in docs if source_of(d) in changed]
        if not todo:
            return
        plan.split_total += len(todo)
        progress.report(ctx, "split", plan.split_done, plan.split_total, show=sender.show)
        pending = await asyncio.to_thread(split_documents, todo, self.transformations, hashes)
        plan.split_done += len(todo)
        progress.report(ctx, "split", plan.split_done, plan.split_total, show=sender.show)
        await sender.add(pending)

    async def _load_in_workers(
        self,
        ctx: Context,
        workers: _Workers,
        found: list[Path],
        groups: list[list[Document]],
        plan: _Plan,
        sender: _Sender,
    ) -> list[SkippedFile]:
        """:meth:`load`'s reading and splitting done by worker processes: a few batches per
        worker in flight, their results taken in order (so the same as in this process)."""
        skipped: list[SkippedFile] = []
        jobs: list[tuple[list[Path], list[Document], int]] = [
            (found[i : i + _READ_BATCH], [], min(i + _READ_BATCH, len(found)))
            for i in range(0, len(found), _READ_BATCH)
        ] + [([], group, 0) for group in groups]
        waiting = iter(jobs)
        in_flight: deque[tuple[Future[Any], int]] = deque()

        def top_up() -> None:
            while len(in_flight) < 2 * workers.count:
                job = next(waiting, None)
                if job is None:
                    return
                in_flight.append((workers.parse(job[0], job[1]), job[2]))

        top_up()
        while in_flight:
            future, read_so_far = in_flight.popleft()
            hashes, read, more_skipped, split, pending = await asyncio.wrap_future(future)
            top_up()
            if read_so_far:
                plan.files += len(read)
                skipped += more_skipped
                progress.report(ctx, "read", read_so_far, len(found), show=sender.show)
            plan.decide(hashes)
            if not split:
                continue
            plan.split_total += split
            progress.report(ctx, "split", plan.split_done, plan.split_total, show=sender.show)
            plan.split_done += split
            progress.report(ctx, "split", plan.split_done, plan.split_total, show=sender.show)
            await sender.add(pending)
        return skipped

    @step(num_workers=4)
    async def embed_and_store(self, ctx: Context, ev: EmbedBatchEvent) -> BatchStoredEvent:
        """Embed one batch (when a model is set; in a worker process when there are) and
        upsert it."""
        if self.embed_model is not None:
            texts = [p.embed_text for p in ev.chunks]
            runs = _Workers.of_run.get(ctx)
            if runs is not None and runs.embeds:
                vectors = await runs.embed(texts)
            else:
                vectors = await self.embed_model.aget_text_embedding_batch(texts)
            chunks = [p.to_chunk(v) for p, v in zip(ev.chunks, vectors, strict=True)]
        else:
            chunks = [p.to_chunk() for p in ev.chunks]
        turns = InOrder.of_run.get(ctx)  # none for a run resumed from a checkpoint
        if turns is not None:
            await turns.run(ev.seq, lambda: self.store.aupsert(chunks))
        else:
            await self.store.aupsert(chunks)
        return BatchStoredEvent(count=len(chunks))

    @step(num_workers=1)
    async def finish(
        self, ctx: Context, ev: IngestPlanEvent | BatchStoredEvent
    ) -> StopEvent | None:
        """Count stored batches; once the plan is in and every batch stored, drop the changed
        sources' old chunks and report. (One worker: its read-modify-writes do not race.)"""
        if isinstance(ev, BatchStoredEvent):
            _Sender.stored(ctx)
            done = await ctx.store.get("ingest_done", default=0) + ev.count
            await ctx.store.set("ingest_done", done)
            batches = await ctx.store.get("ingest_stored_batches", default=0) + 1
            await ctx.store.set("ingest_stored_batches", batches)
            total = await ctx.store.get("ingest_total", default=done)
            show = await ctx.store.get("ingest_show_progress", default=False)
            progress.report(ctx, "store", done, max(total, done), show=show)
        else:
            await ctx.store.set("ingest_plan", ev.model_dump(mode="json"))
            batches = await ctx.store.get("ingest_stored_batches", default=0)
        plan = await ctx.store.get("ingest_plan", default=None)
        if plan is None or batches < plan["total_batches"]:
            return None
        removed = await self.store.aprune_stale(plan["changed_hashes"])
        _close_workers(ctx)
        progress.close(ctx)
        return StopEvent(
            result=IngestionReport(
                files=plan["files"],
                chunks=plan["total_chunks"],
                skipped=[SkippedFile(*s) for s in plan["skipped"]],
                added=plan["added"],
                updated=plan["updated"],
                unchanged=plan["unchanged"],
                removed=plan["removed"],
                chunks_removed=plan["chunks_removed"] + removed,
                repaired=plan["repaired"],
            )
        )


def _source_groups(documents: list[Document]) -> list[list[Document]]:
    """``documents`` in groups of about :data:`_SPLIT_BATCH`, a source's all in one group."""
    by_source: dict[str, list[Document]] = {}
    for doc in documents:
        by_source.setdefault(source_of(doc), []).append(doc)
    groups: list[list[Document]] = []
    group: list[Document] = []
    for docs in by_source.values():
        group += docs
        if len(group) >= _SPLIT_BATCH:
            groups.append(group)
            group = []
    if group:
        groups.append(group)
    return groups


def _close_workers(ctx: Context) -> None:
    InOrder.of_run.pop(ctx, None)
    workers = _Workers.of_run.pop(ctx, None)
    if workers is not None:
        workers.close()


def _gone_sources(
    paths: list[str | os.PathLike[str]],
    stored: Collection[str],
    present: dict[str, str],
    skipped: list[SkippedFile],
) -> list[str]:
    """Stored sources that were files under one of the ingested folders and are gone now."""
    folders = [Path(p).expanduser().resolve() for p in paths if Path(p).expanduser().is_dir()]
    if not folders:
        return []
    kept = set(present) | {str(Path(s.path).resolve()) for s in skipped}
    prefixes = tuple(str(f) + os.sep for f in folders)
    return sorted(s for s in stored if s.startswith(prefixes) and s not in kept)


def _inputs(ev: StartEvent) -> tuple[list[str | os.PathLike[str]], list[Document]]:
    paths = ev.get("paths")
    documents = ev.get("documents")
    if paths is None and documents is None:
        raise ValueError(
            "IngestionWorkflow.run() needs paths=[...] (files or folders) and/or "
            "documents=[Document(...)]."
        )
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    docs = list(documents or [])
    bad = [type(d).__name__ for d in docs if not isinstance(d, Document)]
    if bad:
        raise TypeError(
            f"documents= must hold llama-index Document objects, got {', '.join(bad)}; "
            "wrap text as Document(text=..., metadata={'source': ...})."
        )
    return list(paths or []), docs


__all__ = ["IngestionReport", "IngestionWorkflow"]
