"""Instruments: the hooks the engine calls (:mod:`.instrument`) and its tracing spans.

Imports only the errors of ``batonflow.core``; see ``docs/architecture.md``.
"""
