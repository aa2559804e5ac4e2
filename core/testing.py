"""The public path of :mod:`batonflow.core.engine.testing` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.testing"``: stored runs and pickles name them so.
"""

from .data.events import (
    Event as Event,
)
from .data.events import (
    StartEvent as StartEvent,
)
from .engine.testing import (
    FakeTime as FakeTime,
)
from .engine.testing import (
    WorkflowTestResult as WorkflowTestResult,
)
from .engine.testing import (
    WorkflowTestRunner as WorkflowTestRunner,
)
from .engine.testing import __all__ as __all__
