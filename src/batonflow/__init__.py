"""batonflow: a small, fast, durable event-driven workflow engine with agent and RAG flows.

The engine lives in :mod:`batonflow.core`; prebuilt flows in :mod:`batonflow.agents` and
:mod:`batonflow.rag`; tracing in :mod:`batonflow.observability`; the command line and HTTP
server in :mod:`batonflow.apps`.
"""

__version__ = "0.1.0"
