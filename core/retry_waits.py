"""The public path of :mod:`batonflow.core.retrying.retry_waits` (its code moved into the ``retrying`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.retry_waits"``: stored runs and pickles name them so.
"""

from .retrying._tenacity import (
    call_state as call_state,
)
from .retrying._tenacity import (
    is_call_state as is_call_state,
)
from .retrying._tenacity import (
    tenacity_kind as tenacity_kind,
)
from .retrying.retry_waits import (
    Seconds as Seconds,
)
from .retrying.retry_waits import (
    WaitStrategy as WaitStrategy,
)
from .retrying.retry_waits import __all__ as __all__
from .retrying.retry_waits import (
    as_wait as as_wait,
)
from .retrying.retry_waits import (
    seconds as seconds,
)
from .retrying.retry_waits import (
    wait_chain as wait_chain,
)
from .retrying.retry_waits import (
    wait_combine as wait_combine,
)
from .retrying.retry_waits import (
    wait_exponential as wait_exponential,
)
from .retrying.retry_waits import (
    wait_exponential_jitter as wait_exponential_jitter,
)
from .retrying.retry_waits import (
    wait_fixed as wait_fixed,
)
from .retrying.retry_waits import (
    wait_full_jitter as wait_full_jitter,
)
from .retrying.retry_waits import (
    wait_incrementing as wait_incrementing,
)
from .retrying.retry_waits import (
    wait_none as wait_none,
)
from .retrying.retry_waits import (
    wait_random as wait_random,
)
from .retrying.retry_waits import (
    wait_random_exponential as wait_random_exponential,
)
