"""The public path of :mod:`batonflow.core.retrying.retry_stops` (its code moved into the ``retrying`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.retry_stops"``: stored runs and pickles name them so.
"""

from .retrying._tenacity import (
    call_state as call_state,
)
from .retrying._tenacity import (
    is_call_state as is_call_state,
)
from .retrying._tenacity import (
    state_elapsed as state_elapsed,
)
from .retrying._tenacity import (
    tenacity_kind as tenacity_kind,
)
from .retrying.retry_stops import (
    StopCondition as StopCondition,
)
from .retrying.retry_stops import __all__ as __all__
from .retrying.retry_stops import (
    as_stop as as_stop,
)
from .retrying.retry_stops import (
    stop_after_attempt as stop_after_attempt,
)
from .retrying.retry_stops import (
    stop_after_delay as stop_after_delay,
)
from .retrying.retry_stops import (
    stop_all as stop_all,
)
from .retrying.retry_stops import (
    stop_any as stop_any,
)
from .retrying.retry_stops import (
    stop_before_delay as stop_before_delay,
)
from .retrying.retry_stops import (
    stop_never as stop_never,
)
from .retrying.retry_waits import (
    Seconds as Seconds,
)
from .retrying.retry_waits import (
    seconds as seconds,
)
