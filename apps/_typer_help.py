"""typer's help renderer without rich's Markdown and traceback machinery, until they are used.

``typer.rich_utils`` formats every ``--help``. At its top it imports ``rich.markdown`` (which
loads markdown-it) and ``rich.traceback`` (which loads pygments, ``rich.pretty`` and attrs when
installed): more than half of what ``batonflow --help`` imported. The command line uses neither:
its help is in rich markup mode, not Markdown, and typer's pretty exceptions are off. So
:func:`load_help_renderer` imports ``typer.rich_utils`` while two stand-in modules answer for
``rich.markdown`` and ``rich.traceback``; each stand-in class builds the real rich object, by
importing the real module, the first time it is used. The stand-ins are removed from
``sys.modules`` at once, so any later ``import rich.markdown`` gets rich's own module.

If a typer release imports other names from those modules, the stand-ins are dropped and
``typer.rich_utils`` is imported as it is: slower, never wrong.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


class _Markdown:
    """Builds a ``rich.markdown.Markdown`` (typer's help in Markdown mode), importing it then."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _Traceback:
    """Builds a ``rich.traceback.Traceback`` (typer's pretty exceptions), importing it then."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback(*args, **kwargs)

    @classmethod
    def from_exception(cls, *args: Any, **kwargs: Any) -> Any:
        """``rich.traceback.Traceback.from_exception``, imported when first called."""
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


_STAND_INS = {"rich.markdown": ("Markdown", _Markdown), "rich.traceback": ("Traceback", _Traceback)}


def load_help_renderer() -> None:
    """Import ``typer.rich_utils`` without importing ``rich.markdown`` and ``rich.traceback``."""
    if "typer.rich_utils" in sys.modules:
        return
    placed = []
    for module_name, (class_name, stand_in) in _STAND_INS.items():
        if module_name in sys.modules:
            continue
        module = types.ModuleType(module_name, f"batonflow's stand-in for {module_name}")
        setattr(module, class_name, stand_in)
        sys.modules[module_name] = module
        placed.append(module_name)
    try:
        importlib.import_module("typer.rich_utils")
    except ImportError:
        # Names the stand-ins lack: let typer import rich's own modules.
        sys.modules.pop("typer.rich_utils", None)
        for module_name in placed:
            del sys.modules[module_name]
        placed = []
        importlib.import_module("typer.rich_utils")
    finally:
        for module_name in placed:
            sys.modules.pop(module_name, None)
