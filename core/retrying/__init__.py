"""Retry: the policies a step may run under, as data (waits, stops, conditions, policies).

Imports nothing else of ``batonflow.core`` but its errors; see ``docs/architecture.md``.
"""
