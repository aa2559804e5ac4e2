"""Data: events, the state store, and the serializers that write them down.

What a run carries and how it becomes text: :mod:`.events`, :mod:`.state` (with its paths,
types, edits and layout), :mod:`.serialization` and the type registry that decodes classes by
name. Imports only the errors of ``batonflow.core``; see ``docs/architecture.md``.
"""
