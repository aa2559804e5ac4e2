"""``batonflow rag ingest`` and ``batonflow rag ask``: RAG over local or remote Qdrant."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import typer

from ._console import cli_errors, err, out, print_json, setup_tracing
from .config import Settings
from .registry import BadParameterError, open_qdrant_store

rag_app = typer.Typer(
    help="Ingest documents into Qdrant and ask questions about them.",
    no_args_is_help=True,
    add_completion=False,
)

_COLLECTION = typer.Option(
    None, "--collection", "-c", help="Qdrant collection \\[env BATONFLOW_COLLECTION; docs]."
)
_QDRANT_URL = typer.Option(
    None, "--qdrant-url", help="Qdrant server URL \\[env BATONFLOW_QDRANT_URL; local folder]."
)
_QDRANT_PATH = typer.Option(
    None,
    "--qdrant-path",
    help="Local Qdrant folder \\[env BATONFLOW_QDRANT_PATH; .batonflow/qdrant].",
)
_DEBUG = typer.Option(False, "--debug", help="Show tracebacks of errors.")


@rag_app.command()
def ingest(
    paths: list[Path] = typer.Argument(..., help="Files or folders to ingest."),
    collection: str | None = _COLLECTION,
    qdrant_url: str | None = _QDRANT_URL,
    qdrant_path: Path | None = _QDRANT_PATH,
    ext: list[str] = typer.Option(
        [],
        "--ext",
        help="Read only files with this suffix (repeat it: --ext .md --ext .html; '' for files "
        "without one) [default: text, Markdown, reST, PDF, untyped text files, and .gz of them].",
    ),
    hidden: bool = typer.Option(False, "--hidden", help="Read hidden files and folders too."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="List every file not ingested, with its reason."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    debug: bool = _DEBUG,
) -> None:
    """Read, split, index and store documents (re-ingesting a file replaces its chunks).

    Every file under a folder that is not ingested is counted by reason (--verbose lists them).
    """
    with cli_errors(debug):
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise BadParameterError(
                f"Path(s) not found: {', '.join(missing)}; check the spelling or the current folder."
            )
        settings = Settings.load(
            collection=collection, qdrant_url=qdrant_url, qdrant_path=qdrant_path
        )
        check_store(settings)
        setup_tracing()
        from ._signals import EXIT_INTERRUPTED, Interrupted, run_interruptibly

        try:
            report = run_interruptibly(
                ingest_paths(
                    settings,
                    [str(p) for p in paths],
                    progress=not as_json,
                    required_exts=_exts(ext),
                    exclude_hidden=not hidden,
                )
            )
        except Interrupted as exc:
            err.print(
                f"interrupted by {exc.signal_name}: the chunks stored so far are kept; run the "
                "same command again to finish (unchanged files are skipped)",
                markup=False,
            )
            raise typer.Exit(EXIT_INTERRUPTED) from None
        if as_json:
            print_json(report)
        else:
            print_report(report, settings, verbose=verbose, named=[str(p) for p in paths])


def _exts(raw: list[str]) -> list[str] | None:
    # "--ext md" means ".md": the dot is what llama-index's required_exts wants, not what
    # people type.
    if not raw:
        return None
    return [e if not e or e.startswith(".") else "." + e for e in (x.strip() for x in raw)]


async def ingest_paths(
    settings: Settings,
    paths: list[str],
    progress: bool = True,
    *,
    required_exts: list[str] | None = None,
    exclude_hidden: bool = True,
) -> Any:
    """Run the ingestion workflow over ``paths`` with a progress bar; return its report."""
    store = open_qdrant_store(settings)  # a locked folder is reported before llama-index loads
    try:
        from batonflow.rag import IngestionWorkflow, IngestProgress
        from batonflow.rag.progress import PHASES
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        workflow = IngestionWorkflow(
            store=store, required_exts=required_exts, exclude_hidden=exclude_hidden
        )
        handler = workflow.run(paths=paths)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err,
            disable=not progress,
            transient=True,
        ) as bar:
            # Finding the files comes first and has no count yet.
            task = bar.add_task("finding files", total=None)
            try:
                async for event in handler.stream_events():
                    if isinstance(event, IngestProgress):
                        bar.update(
                            task,
                            description=PHASES[event.phase],
                            completed=event.done,
                            total=event.total,
                        )
                return await handler
            except asyncio.CancelledError:  # Ctrl-C or SIGTERM: stop the run, then go
                from ._signals import stop_handler

                await stop_handler(handler)
                raise
    finally:
        _close(store)


def print_report(
    report: Any, settings: Settings, *, verbose: bool = False, named: list[str] | None = None
) -> None:
    """Summarise an ingestion report for humans: every file not ingested is counted by reason.

    Each file is listed too when there are a few (up to five), when it was named on the command
    line, or with ``verbose`` (a folder such as /usr/share/doc leaves thousands).
    """
    from batonflow.rag.files import SKIP_KINDS, SkippedFile, count_skipped

    where = settings.qdrant_url or settings.qdrant_path
    out.print(
        f"ingested {getattr(report, 'files', '?')} file(s), {getattr(report, 'chunks', '?')} "
        f"chunk(s) into collection {settings.collection!r} at {where}",
        markup=False,
    )
    skipped = [SkippedFile(*s) for s in getattr(report, "skipped", None) or []]
    counts = count_skipped(skipped)
    if counts:
        total = sum(counts.values())
        out.print(f"not ingested: {total} file(s)", markup=False)
        for kind, n in counts.items():
            out.print(f"  {n:>6}  {SKIP_KINDS.get(kind, kind)}", markup=False)
    named_paths = {str(Path(p).expanduser()) for p in named or []}
    listed = [s for s in skipped if verbose or len(skipped) <= 5 or s.path in named_paths]
    for item in listed:
        out.print(f"  skipped {item.path}: {item.reason}", markup=False)
    if skipped and not verbose and len(listed) < len(skipped):
        out.print("  (--verbose lists each file and why)", markup=False)
    for path in getattr(report, "repaired", None) or []:
        out.print(
            f"  repaired {path}: an interrupted ingestion had stored only part of it; "
            "stored whole now",
            markup=False,
        )


@rag_app.command()
def ask(
    question: str = typer.Argument(..., help="The question."),
    collection: str | None = _COLLECTION,
    qdrant_url: str | None = _QDRANT_URL,
    qdrant_path: Path | None = _QDRANT_PATH,
    top_k: int = typer.Option(5, "--top-k", min=1, help="How many passages to retrieve."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    debug: bool = _DEBUG,
) -> None:
    """Answer a question from the ingested documents, with numbered sources.

    Extractive (the best passages, cited) unless OPENAI_API_KEY is set.
    """
    with cli_errors(debug):
        if not question.strip():
            raise BadParameterError('The question is empty; ask something, e.g. "What is RAG?".')
        settings = Settings.load(
            collection=collection, qdrant_url=qdrant_url, qdrant_path=qdrant_path
        )
        check_store(settings, collection=True)
        setup_tracing()
        response = asyncio.run(ask_question(settings, question, top_k=top_k))
        if as_json:
            print_json(response)
        else:
            print_answer(response)


async def ask_question(settings: Settings, question: str, top_k: int = 5) -> Any:
    """Run the RAG workflow on one question; return its ``RAGResponse``."""
    store = open_qdrant_store(settings)
    try:
        from batonflow.rag import RAGWorkflow

        from .registry import _llm

        llm = _llm(settings, "rag") if settings.openai_api_key else None
        return await RAGWorkflow(store=store, llm=llm, top_k=top_k).run(query=question)
    finally:
        _close(store)


def check_store(settings: Settings, *, collection: bool = False) -> None:
    """Fail fast on a store that cannot work, before qdrant-client and llama-index load.

    Their imports take seconds, and a typo in ``--collection`` or ``--qdrant-url`` is found
    in milliseconds: a Qdrant server gets one request (:func:`batonflow.rag._probe.
    probe_server`), a local folder is opened (which imports neither) and closed again.

    Args:
        settings: Where the store is.
        collection: Also check that the collection exists (to ask it; ingesting creates it).

    Raises:
        StoreUnavailableError: Nothing answers at ``--qdrant-url``.
        FlowSetupError: The local folder is in use by another process.
        BadParameterError: ``collection`` and the collection is not there; the message lists
            those that are.
    """
    if settings.qdrant_url:
        from batonflow.rag._probe import probe_server
        from batonflow.rag.errors import CollectionNotFoundError

        try:
            probe_server(settings.qdrant_url, settings.collection if collection else None)
        except CollectionNotFoundError as exc:
            raise BadParameterError(str(exc)) from None
        return
    if collection:
        store = open_qdrant_store(settings)
        try:
            _check_collection(store, settings)
        finally:
            _close(store)


def _check_collection(store: Any, settings: Settings) -> None:
    """Refuse to ask a collection that does not exist (a typo would answer "found nothing").

    The RAG workflow itself raises the same error (``CollectionNotFoundError``), so the CLI and
    the server say the same; checking first here just avoids starting a run.

    Raises:
        BadParameterError: The collection is not there; the message lists those that are.
    """
    from batonflow.rag.store import collection_not_found

    if not store.exists():
        raise BadParameterError(str(collection_not_found(store)))


def print_answer(response: Any) -> None:
    """Print an answer and its numbered sources."""
    out.print(str(getattr(response, "answer", response)), markup=False)
    sources = getattr(response, "sources", None) or []
    if sources:
        out.print("\nSources:", markup=False)
    for i, source in enumerate(sources, 1):
        meta = getattr(source, "metadata", {}) or {}
        name = meta.get("file_name") or meta.get("source") or meta.get("file_path") or "?"
        score = getattr(source, "score", None)
        scored = f" (score {score:.3f})" if isinstance(score, int | float) else ""
        out.print(f"  [{i}] {name}{scored}", markup=False)


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):  # best effort; the data is already written
            close()
