"""The public path of the run queue's limits (its code lives in the ``durable`` room).

Runs started under :class:`RunLimits` are recorded ``queued`` and leave the queue as the
limits allow: see :mod:`batonflow.core.durable._queue` and docs/deploy.md ("The queue").
"""

from .durable._queue import QueuePlace as QueuePlace
from .durable._queue import RunLimits as RunLimits

__all__ = ["QueuePlace", "RunLimits"]
