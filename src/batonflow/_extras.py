"""Clear errors for optional dependencies: each sub-package names the extra that installs it."""

from __future__ import annotations

import importlib.util


class MissingDependencyError(ImportError):
    """A package that a batonflow extra installs is missing; the message says what to install."""


def require_extra(package: str, extra: str, modules: dict[str, str]) -> None:
    """Raise :class:`MissingDependencyError` unless every module in ``modules`` can be imported.

    Args:
        package: The batonflow sub-package asking, e.g. ``"batonflow.rag"``.
        extra: The extra that installs what it needs, e.g. ``"rag"``.
        modules: Import name → distribution name, e.g. ``{"qdrant_client": "qdrant-client"}``.
    """
    missing = [dist for module, dist in modules.items() if not _importable(module)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise MissingDependencyError(
            f"{package} needs {', '.join(missing)}, which {verb} not installed. Install the "
            f"{extra} extra: pip install 'batonflow[{extra}]'"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a missing parent package
        return False
