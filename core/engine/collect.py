"""Collection joins: a step that takes ``list[E]`` gathers the results of a fan-out.

A step returning ``list[E]`` opens a *collection stream*: each element starts a branch, and
every event a branch's steps return stays in that branch. A step whose parameter is
``list[R]`` (or ``Annotated[list[R], Collect(...)]``) receives, once, the ``R`` events the
branches of one stream produced:

* ``Collect(All())`` (the default for a bare ``list[R]``): when every branch has finished, with
  every ``R`` they produced, in branch order. A producer returning ``[]`` makes it fire at once
  with ``[]``.
* ``Collect(Take(n))``: on the ``n``-th arrival, with the first ``n`` (the other branches run
  on, but their results do not reach it); if the stream ends first, with what arrived.

Events sent with ``ctx.send_event`` do not belong to a stream and never reach a collection
parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._public import publish


@dataclass(frozen=True)
class Cardinality:
    """How much of a collection stream a ``list[E]`` parameter waits for."""


@dataclass(frozen=True)
class All(Cardinality):
    """Fire once every branch of the stream has finished, with everything it produced."""


@dataclass(frozen=True)
class Take(Cardinality):
    """Fire on the ``n``-th arrival with the first ``n`` events.

    Raises:
        ValueError: ``n`` is not an integer of at least 1.
    """

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"Take(n) needs an integer n >= 1, got {self.n!r}.")


@dataclass(frozen=True)
class Collect:
    """Marks a ``list[E]`` step parameter as a collection join: ``Annotated[list[E], Collect()]``.

    Args:
        cardinality: :class:`All` (default) or :class:`Take`.
    """

    cardinality: Cardinality = field(default_factory=All)

    def __post_init__(self) -> None:
        if type(self.cardinality) not in (All, Take):
            raise TypeError(f"Collect() takes All() or Take(n), got {self.cardinality!r}.")


__all__ = ["All", "Cardinality", "Collect", "Take"]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
