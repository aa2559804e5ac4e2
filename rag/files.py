"""Which files ingestion reads, how it reads each one, and why it leaves the others.

A folder is walked once. Every file under it is either read or reported with a reason: nothing is
ignored quietly (a hidden folder is reported once, as itself, without walking into it). What is
read follows llama-index's ``SimpleDirectoryReader`` where it has a word for it:

* ``required_exts``: read only files with these suffixes (``""`` for files without one); a
  ``.gz`` file counts with its inner suffix (``NEWS.txt.gz`` as ``.txt``) and as ``.gz``.
* ``file_extractor``: a llama-index reader per suffix (``{".html": MyReader()}``); its suffixes
  are read too without ``required_exts``.
* ``exclude_hidden``: files and folders whose name starts with a dot are left out (reported).

By default batonflow reads Markdown, text and reStructuredText files, PDFs (with
``batonflow[pdf]``), files of no recognised type that hold UTF-8 text (no suffix, as ``README``
or ``copyright``, or one no MIME type is known for, as ``README.Debian``), and gzip-compressed
versions of all of these (``changelog.Debian.gz``), decompressed in memory. A file of another
known type (``.html``, ``.py``, ``.png``) is reported; ``--ext`` / ``required_exts`` adds it, read
as text. Which suffixes have a known type is Python's built-in table, the same on every machine.

The walk and the reading are our own code (not one ``SimpleDirectoryReader`` over the folder)
because that reader drops what it cannot read without saying so, reads any suffix as text, and
cannot read ``.gz``; each file is still handed to ``SimpleDirectoryReader`` (or to the given
extractor) so documents carry llama-index's usual file metadata.
"""

from __future__ import annotations

import gzip
import importlib.util
import logging
import mimetypes
import os
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from llama_index.core import Document, SimpleDirectoryReader
from llama_index.core.readers.base import BaseReader
from llama_index.core.readers.file.base import default_file_metadata_func

from .errors import RAGConfigError

#: File types read by default (lowercase suffixes), besides PDF and files without a suffix.
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst")
PDF_SUFFIX = ".pdf"
GZIP_SUFFIX = ".gz"
_SNIFF_BYTES = 8192
#: A decompressed ``.gz`` larger than this is refused (a compressed file can expand a
#: thousandfold; text worth ingesting is far smaller).
MAX_GZIP_BYTES = 64 * 1024 * 1024


class _NoReadersFileWarning(logging.Filter):
    # SimpleDirectoryReader logs "llama-index-readers-file package not found" for every file it
    # reads when that optional package is missing; ingestion reports PDFs itself, so drop it.
    def filter(self, record: logging.LogRecord) -> bool:
        return "`llama-index-readers-file` package not found" not in record.getMessage()


logging.getLogger("llama_index.core.readers.file.base").addFilter(_NoReadersFileWarning())


class SkippedFile(NamedTuple):
    """A file ingestion did not read, why (``reason``), and the kind of reason (``kind``).

    Kinds: ``hidden``, ``type`` (a suffix not read), ``excluded`` (not in ``required_exts``),
    ``binary``, ``encoding`` (not UTF-8), ``empty``, ``unreadable``, ``pdf`` (PDF support not
    installed), ``missing`` (no such path), ``too-large`` (a ``.gz`` that expands too far).
    """

    path: str
    reason: str
    kind: str = "unreadable"


#: What each kind of skip means, for reports (``batonflow rag ingest`` prints these).
SKIP_KINDS = {
    "hidden": "hidden (name starts with '.'; exclude_hidden=False reads them)",
    "type": "file type not read (add it with --ext / required_exts)",
    "excluded": "not in the extensions asked for",
    "binary": "binary, not text",
    "encoding": "not UTF-8 text",
    "empty": "empty",
    "unreadable": "unreadable",
    "pdf": "PDF support not installed (pip install 'batonflow[pdf]')",
    "missing": "no such file or directory",
    "too-large": f"decompresses past {MAX_GZIP_BYTES // 2**20} MiB",
}


def count_skipped(skipped: Iterable[SkippedFile | Sequence[str]]) -> dict[str, int]:
    """How many files were skipped per kind, most frequent first."""
    kinds = Counter(SkippedFile(*s).kind for s in skipped)
    return dict(kinds.most_common())


class _Skip(Exception):
    """Internal: this file cannot be ingested, for the reason given."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind


@dataclass(frozen=True)
class FileSelection:
    """Which files under the ingested paths are read, and with which reader.

    Args:
        required_exts: read only files with these suffixes (``".html"``; ``""`` for files
            without one). ``None``: the default types (see the module docs) plus the suffixes
            of ``file_extractor``.
        file_extractor: a llama-index reader per suffix, used instead of the default one.
        exclude_hidden: leave out files and folders whose name starts with a dot.

    Raises:
        RAGConfigError: a suffix is not a string starting with a dot (or ``""``), or a reader
            is not a llama-index ``BaseReader``.
    """

    required_exts: tuple[str, ...] | None = None
    file_extractor: Mapping[str, BaseReader] = field(default_factory=dict)
    exclude_hidden: bool = True

    def __post_init__(self) -> None:
        if self.required_exts is not None:
            if isinstance(self.required_exts, str):
                raise RAGConfigError(
                    f"required_exts={self.required_exts!r} is one string; pass a list of "
                    f"suffixes, e.g. required_exts=[{self.required_exts!r}]."
                )
            exts = tuple(_suffix(e, "required_exts") for e in self.required_exts)
            object.__setattr__(self, "required_exts", exts)
        extractors: dict[str, BaseReader] = {}
        for ext, reader in dict(self.file_extractor).items():
            if not isinstance(reader, BaseReader):
                raise RAGConfigError(
                    f"file_extractor[{ext!r}] is {type(reader).__name__}; give a llama-index "
                    "reader instance (a BaseReader, e.g. from llama_index.readers.file)."
                )
            extractors[_suffix(ext, "file_extractor")] = reader
        object.__setattr__(self, "file_extractor", extractors)

    def _wants(self, suffixes: Sequence[str]) -> bool:
        """Whether a file whose suffixes (innermost first) are ``suffixes`` is to be read."""
        if self.required_exts is not None:
            return any(s in self.required_exts for s in suffixes)
        return any(s in self.file_extractor or s in _DEFAULT or _untyped(s) for s in suffixes)


_DEFAULT = frozenset((*TEXT_SUFFIXES, PDF_SUFFIX))
# Python's built-in table only (not the machine's /etc/mime.types), so the same files are read on
# every machine.
_MIME = mimetypes.MimeTypes(strict=False)


def _untyped(suffix: str) -> bool:
    """A suffix that says nothing of the content: none, or one no MIME type is known for."""
    return suffix != GZIP_SUFFIX and (
        not suffix or _MIME.guess_type("f" + suffix, strict=False)[0] is None
    )


def _suffix(ext: object, option: str) -> str:
    if not isinstance(ext, str) or (ext and not ext.startswith(".")):
        raise RAGConfigError(
            f"{option} holds {ext!r}; give suffixes with their dot, like '.html' ('' for files "
            "without a suffix)."
        )
    return ext.lower()


def _suffixes(path: Path) -> list[str]:
    # A .gz file is taken for what it holds (NEWS.txt.gz as .txt, changelog.gz as a file
    # without a suffix), and as .gz so required_exts=[".gz"] selects every compressed file.
    if path.suffix.lower() == GZIP_SUFFIX:
        return [Path(path.stem).suffix.lower(), GZIP_SUFFIX]
    return [path.suffix.lower()]


def discover(
    paths: Iterable[str | os.PathLike[str]], selection: FileSelection | None = None
) -> tuple[list[Path], list[SkippedFile]]:
    """The files to read under ``paths`` (files and folders, recursively), and those left out.

    Every file under a folder is either returned or reported, and so is each path named
    directly that is not read (a hidden file named directly is read: it was asked for).
    """
    selection = selection or FileSelection()
    files: dict[Path, None] = {}
    skipped: list[SkippedFile] = []

    def consider(path: Path) -> None:
        if selection._wants(_suffixes(path)):
            files.setdefault(path.resolve(), None)
            return
        if selection.required_exts is not None:
            wanted = ", ".join(repr(e) for e in selection.required_exts)
            reason = f"suffix {path.suffix or '(none)'!r} is not among required_exts ({wanted})"
            skipped.append(SkippedFile(str(path), reason, "excluded"))
        else:
            skipped.append(
                SkippedFile(
                    str(path),
                    f"file type {path.suffix!r} is not read by default; add it with --ext "
                    f"{path.suffix} (required_exts=[...]) to read it as text, or give a reader "
                    "for it in file_extractor",
                    "type",
                )
            )

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                here = Path(dirpath)
                if selection.exclude_hidden:
                    for name in [d for d in dirnames if d.startswith(".")]:
                        skipped.append(
                            SkippedFile(str(here / name), "hidden folder, not read", "hidden")
                        )
                    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                dirnames.sort()
                for name in sorted(filenames):
                    found = here / name
                    if selection.exclude_hidden and name.startswith("."):
                        skipped.append(SkippedFile(str(found), "hidden file, not read", "hidden"))
                    elif found.is_file():
                        consider(found)
                    else:  # a dangling link, a socket, a fifo
                        skipped.append(SkippedFile(str(found), "not a regular file", "unreadable"))
        elif path.is_file():
            consider(path)
        else:
            skipped.append(SkippedFile(str(path), "no such file or directory", "missing"))
    return list(files), skipped


def read_file(path: Path, selection: FileSelection | None = None) -> list[Document]:
    """Read one file into documents (a ``.gz`` one decompressed).

    Raises:
        _Skip: the file is binary, not UTF-8, empty, unreadable, a PDF without PDF support, or a
            ``.gz`` that is corrupt or expands past :data:`MAX_GZIP_BYTES`.
    """
    selection = selection or FileSelection()
    suffix = path.suffix.lower()
    # A reader given for ".gz" reads the compressed file itself; otherwise it is decompressed
    # here (a reader of the inner suffix expects the plain file, not its compressed bytes).
    reader = selection.file_extractor.get(suffix)
    if suffix == GZIP_SUFFIX and reader is None:
        docs = [_read_gzip(path)]
    else:
        docs = _read_plain(path, suffix, reader)
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise _Skip("empty: no text", "empty")
    source = str(path)
    for doc in docs:
        doc.metadata["file_path"] = source
    return docs


def _read_plain(path: Path, suffix: str, reader: BaseReader | None) -> list[Document]:
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        raise _Skip(f"unreadable: {exc.strerror or exc}", "unreadable") from exc
    if reader is None:
        if suffix == PDF_SUFFIX:
            if not _pdf_support():
                raise _Skip("PDF support is not installed; run pip install 'batonflow[pdf]'", "pdf")
        elif b"\x00" in head:
            raise _Skip("binary file, not text", "binary")
    extractor = {path.suffix.lower(): reader} if reader is not None else None
    try:
        docs = SimpleDirectoryReader(
            input_files=[path], errors="strict", raise_on_error=True, file_extractor=extractor
        ).load_data()
    except UnicodeDecodeError as exc:
        raise _Skip(f"not UTF-8 text (byte {exc.start}: {exc.reason})", "encoding") from exc
    except Exception as exc:  # a reader's failure on one file must not stop the others
        raise _Skip(f"unreadable: {type(exc).__name__}: {exc}", "unreadable") from exc
    return list(docs)


def _read_gzip(path: Path) -> Document:
    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read(MAX_GZIP_BYTES + 1)
    except OSError as exc:  # gzip.BadGzipFile is an OSError
        raise _Skip(f"unreadable .gz: {exc}", "unreadable") from exc
    except (EOFError, zlib.error) as exc:
        raise _Skip(f"truncated or corrupt .gz: {exc}", "unreadable") from exc
    if len(data) > MAX_GZIP_BYTES:
        raise _Skip(
            f"decompresses past {MAX_GZIP_BYTES // 2**20} MiB; decompress it yourself if you "
            "mean to ingest it",
            "too-large",
        )
    if _SNIFF_BYTES and b"\x00" in data[:_SNIFF_BYTES]:
        raise _Skip("compressed binary file, not text", "binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Skip(f"not UTF-8 text (byte {exc.start}: {exc.reason})", "encoding") from exc
    metadata: dict[str, Any] = default_file_metadata_func(str(path))
    metadata["compression"] = "gzip"
    return Document(text=text, metadata=metadata)


def _pdf_support() -> bool:
    # SimpleDirectoryReader reads PDFs with llama-index-readers-file; without it, it would
    # return the raw PDF bytes as "text".
    try:
        return importlib.util.find_spec("llama_index.readers.file") is not None
    except ModuleNotFoundError:  # the parent package llama_index.readers is missing too
        return False


def load_files(
    paths: Iterable[str | os.PathLike[str]], selection: FileSelection | None = None
) -> tuple[list[Document], list[str], list[SkippedFile]]:
    """Read every selected file under ``paths``: (documents, files read, files skipped)."""
    files, skipped = discover(paths, selection)
    documents, read, more = read_files(files, selection)
    return documents, read, skipped + more


def read_files(
    files: Iterable[Path], selection: FileSelection | None = None
) -> tuple[list[Document], list[str], list[SkippedFile]]:
    """Read the given files: (documents, files read, files skipped with their reason)."""
    documents: list[Document] = []
    read: list[str] = []
    skipped: list[SkippedFile] = []
    for path in files:
        try:
            documents.extend(read_file(path, selection))
        except _Skip as skip:
            skipped.append(SkippedFile(str(path), str(skip), skip.kind))
        else:
            read.append(str(path))
    return documents, read, skipped


__all__ = [
    "GZIP_SUFFIX",
    "MAX_GZIP_BYTES",
    "PDF_SUFFIX",
    "SKIP_KINDS",
    "TEXT_SUFFIXES",
    "FileSelection",
    "SkippedFile",
    "count_skipped",
    "discover",
    "load_files",
    "read_file",
    "read_files",
]
