"""The public module path of the classes and functions a room module defines.

A public module whose code moved into a room (``batonflow.core.data.events``) is re-exported
from its old path (``batonflow.core.events``). Stored data names classes by module path (the JSON
serializer's ``"batonflow.core.events:StartEvent"``, pickles, waiters, the event log), so the
room module gives its own classes and functions that public path back, as trio does for its
public names: what runs wrote before the move still loads, and what they write now is the same.
"""

from __future__ import annotations

from typing import Any


def publish(module_name: str, namespace: dict[str, Any]) -> None:
    """Set ``__module__`` of the public classes and functions defined in ``module_name``.

    ``batonflow.core.<room>.<name>`` becomes ``batonflow.core.<name>``: the module that
    re-exports them. Names starting with ``_`` and objects imported from elsewhere are left.
    """
    room_package, _, name = module_name.rpartition(".")
    public = f"{room_package.rpartition('.')[0]}.{name}"
    for key, obj in namespace.items():
        if key.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__")):
            obj.__module__ = public
