"""Query filters: llama-index ``MetadataFilters``, Qdrant filters, or a plain dict, as one Qdrant filter.

Every query of :class:`~batonflow.rag.QdrantStore` (and so of :class:`~batonflow.rag.QdrantRetriever`
and ``RAGWorkflow.run(filters=...)``) takes any of:

* a qdrant-client ``models.Filter`` (used as it is, the full Qdrant filter language);
* llama-index ``MetadataFilters`` (``MetadataFilter(key="file_name", value="car.md")``, operators
  ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``nin``, ``text_match``, ``is_empty``, and
  nested filters joined with ``and`` / ``or`` / ``not``), converted the way llama-index's own
  ``QdrantVectorStore`` converts them, so a filter means the same on both;
* a dict ``{"file_name": "car.md", "lang": ["en", "de"]}``: each key must match (a list: any of).

Keys name payload fields: a chunk's metadata keys sit at the top level of its payload (as in
llama-index's layout), next to ``source`` and ``chunk``. Several filters given at once (one
on the workflow, one for the run) must all hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from qdrant_client import models

from .errors import StoreConfigError

#: What a ``filters=`` / ``query_filter=`` argument may be.
FilterLike: TypeAlias = "models.Filter | MetadataFilters | Mapping[str, Any] | None"


def to_qdrant_filter(filters: Any) -> models.Filter | None:
    """One Qdrant filter for ``filters`` (see the module docs for what it may be).

    Raises:
        StoreConfigError: ``filters`` is of another type, or uses an operator Qdrant has no
            equivalent for.
    """
    if filters is None or isinstance(filters, models.Filter):
        return filters
    if isinstance(filters, MetadataFilters):
        return _from_metadata_filters(filters) if filters.filters else None
    if isinstance(filters, MetadataFilter):
        return _from_metadata_filters(MetadataFilters(filters=[filters]))
    if isinstance(filters, Mapping):
        if not filters:
            return None
        return models.Filter(must=[_match(str(k), v) for k, v in filters.items()])
    raise StoreConfigError(
        f"filters= got {type(filters).__name__} {filters!r:.80}; pass a llama-index "
        "MetadataFilters, a qdrant_client.models.Filter, or a dict {'key': value}."
    )


def combine(*filters: models.Filter | None) -> models.Filter | None:
    """The filter that holds when every given filter holds (``None`` ones are left out)."""
    given = [f for f in filters if f is not None]
    if not given:
        return None
    if len(given) == 1:
        return given[0]
    return models.Filter(must=list(given))


def _match(key: str, value: Any) -> models.FieldCondition:
    if isinstance(value, list | tuple | set | frozenset):
        return models.FieldCondition(key=key, match=models.MatchAny(any=list(value)))
    if isinstance(value, float):
        return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _values(value: Any) -> list[Any]:
    # llama-index's QdrantVectorStore splits a string on commas for IN / NIN.
    return (
        list(value)
        if isinstance(value, Sequence) and not isinstance(value, str)
        else (str(value).split(","))
    )


def _condition(f: MetadataFilter) -> Any:
    op, key, value = f.operator, f.key, f.value
    if op == FilterOperator.EQ:
        return _match(key, value)
    ranges = {
        FilterOperator.LT: "lt",
        FilterOperator.LTE: "lte",
        FilterOperator.GT: "gt",
        FilterOperator.GTE: "gte",
    }
    if op in ranges:
        return models.FieldCondition(key=key, range=models.Range(**{ranges[op]: value}))
    if op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
        return models.FieldCondition(key=key, match=models.MatchText(text=str(value)))
    if op == FilterOperator.NE:
        return models.FieldCondition(key=key, match=models.MatchExcept(**{"except": [value]}))
    if op == FilterOperator.IN:
        return models.FieldCondition(key=key, match=models.MatchAny(any=_values(value)))
    if op == FilterOperator.NIN:
        return models.FieldCondition(
            key=key, match=models.MatchExcept(**{"except": _values(value)})
        )
    if op == FilterOperator.IS_EMPTY:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
    if op == FilterOperator.ANY:  # a list field holding any of the values
        return models.FieldCondition(key=key, match=models.MatchAny(any=_values(value)))
    if op == FilterOperator.CONTAINS:  # a list field holding the value
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))
    raise StoreConfigError(
        f"MetadataFilter operator {op.value!r} (on {key!r}) has no Qdrant equivalent here; use "
        "==, !=, <, <=, >, >=, in, nin, any, contains, text_match or is_empty, or pass a "
        "qdrant_client.models.Filter."
    )


def _from_metadata_filters(filters: MetadataFilters) -> models.Filter:
    conditions: list[Any] = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            if f.filters:
                conditions.append(_from_metadata_filters(f))
        else:
            conditions.append(_condition(f))
    if filters.condition == FilterCondition.OR:
        return models.Filter(should=conditions)
    if filters.condition == FilterCondition.NOT:
        return models.Filter(must_not=conditions)
    return models.Filter(must=conditions)


__all__ = ["FilterLike", "combine", "to_qdrant_filter"]
