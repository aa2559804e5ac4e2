"""Diagram: a workflow drawn (its representation, the layout, the HTML/Mermaid pages).

Reads the engine's graph; nothing below it imports this room. See ``docs/architecture.md``.
"""
