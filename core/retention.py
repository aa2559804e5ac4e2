"""The public path of :mod:`batonflow.core.durable.retention` (its code lives in the ``durable`` room).

Ended runs forgotten in the background once they are old enough: :class:`Retention`.
"""

from .durable.retention import Retention as Retention
from .durable.retention import parse_duration as parse_duration

__all__ = ["Retention", "parse_duration"]
