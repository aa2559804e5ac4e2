"""Drawings that show themselves in a notebook and still are the strings they always were.

``draw_*`` functions return the page (or the Mermaid text) as before, so code that writes or
searches it keeps working; a notebook shows a :class:`Drawing` as the drawing, not as 20 KB of
HTML source.
"""

from __future__ import annotations

import html
from typing import Any

#: The height of a drawing shown in a notebook cell, in CSS pixels (it scrolls past that).
FRAME_HEIGHT = 460


class Drawing(str):
    """An HTML drawing page: a ``str`` that a notebook shows as the drawing.

    The page is shown in an ``<iframe srcdoc>``, so its stylesheet stays inside it and cannot
    restyle the notebook.
    """

    __slots__ = ("shown",)

    shown: bool

    def __new__(cls, page: str, *, shown: bool = False) -> Drawing:
        """Wrap ``page``; ``shown=True`` when it was already displayed (``notebook=True``)."""
        self = super().__new__(cls, page)
        self.shown = shown
        return self

    def _repr_html_(self) -> str | None:
        if self.shown:  # already displayed by notebook=True: do not show it twice
            return None
        return iframe(str(self))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # What a notebook shows when there is no HTML (already shown, or a text console):
        # a line, not the page's source.
        state = ", shown above" if self.shown else ""
        printer.text(f"<Drawing: an HTML page of {len(self):,} characters{state}>")


class MermaidText(str):
    """Mermaid flowchart text: a ``str`` that a notebook shows as a diagram.

    JupyterLab (4.1 and later) and GitHub render a ```` ```mermaid ```` fence in Markdown.
    """

    __slots__ = ()

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self}```\n"


def iframe(page: str, height: int = FRAME_HEIGHT) -> str:
    """``page`` inside a sandboxed ``<iframe srcdoc>`` (the drawing needs no script).

    Wrapped in a ``<div>``: IPython warns about HTML that is a bare iframe.
    """
    return (
        f'<div class="batonflow-drawing"><iframe sandbox="" style="width:100%;height:{height}px;'
        f'border:1px solid #ddd;border-radius:4px" srcdoc="{html.escape(page, quote=True)}">'
        "</iframe></div>"
    )


__all__ = ["FRAME_HEIGHT", "Drawing", "MermaidText", "iframe"]
