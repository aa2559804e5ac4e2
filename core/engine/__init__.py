"""The engine: steps, the graph, the workflow, its context and the run loop.

:mod:`.step` reads step annotations, :mod:`.graph` checks who accepts what, :mod:`.workflow`
starts a :class:`~._runtime.Run` whose collaborators (lanes, executions, branches, services,
stream, snapshot) sit in the ``_``-modules next to it; :mod:`.context` and :mod:`.handler` are
what a step and a caller hold. See ``docs/architecture.md`` for what this room may import.
"""
