"""The public path of :mod:`batonflow.core.engine.collect` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.collect"``: stored runs and pickles name them so.
"""

from .engine.collect import (
    All as All,
)
from .engine.collect import (
    Cardinality as Cardinality,
)
from .engine.collect import (
    Collect as Collect,
)
from .engine.collect import (
    Take as Take,
)
from .engine.collect import __all__ as __all__
