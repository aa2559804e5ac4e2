"""The public path of :mod:`batonflow.core.retrying.retry` (its code moved into the ``retrying`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.retry"``: stored runs and pickles name them so.
"""

from .retrying._tenacity import (
    tenacity_kind as tenacity_kind,
)
from .retrying.retry import (
    AnyRetryPolicy as AnyRetryPolicy,
)
from .retrying.retry import (
    ComposedRetryPolicy as ComposedRetryPolicy,
)
from .retrying.retry import (
    ConstantDelayRetryPolicy as ConstantDelayRetryPolicy,
)
from .retrying.retry import (
    ExponentialBackoffRetryPolicy as ExponentialBackoffRetryPolicy,
)
from .retrying.retry import (
    RetryInfo as RetryInfo,
)
from .retrying.retry import (
    RetryPolicy as RetryPolicy,
)
from .retrying.retry import (
    RetryPolicyWithoutSeed as RetryPolicyWithoutSeed,
)
from .retrying.retry import __all__ as __all__
from .retrying.retry import (
    ask_policy as ask_policy,
)
from .retrying.retry import (
    retry_policy as retry_policy,
)
from .retrying.retry import (
    retry_seed as retry_seed,
)
from .retrying.retry_conditions import (
    RetryCondition as RetryCondition,
)
from .retrying.retry_conditions import (
    as_condition as as_condition,
)
from .retrying.retry_conditions import (
    retry_all as retry_all,
)
from .retrying.retry_conditions import (
    retry_always as retry_always,
)
from .retrying.retry_conditions import (
    retry_any as retry_any,
)
from .retrying.retry_conditions import (
    retry_if_exception as retry_if_exception,
)
from .retrying.retry_conditions import (
    retry_if_exception_cause_type as retry_if_exception_cause_type,
)
from .retrying.retry_conditions import (
    retry_if_exception_message as retry_if_exception_message,
)
from .retrying.retry_conditions import (
    retry_if_exception_type as retry_if_exception_type,
)
from .retrying.retry_conditions import (
    retry_if_not_exception_message as retry_if_not_exception_message,
)
from .retrying.retry_conditions import (
    retry_if_not_exception_type as retry_if_not_exception_type,
)
from .retrying.retry_conditions import (
    retry_never as retry_never,
)
from .retrying.retry_conditions import (
    retry_unless_exception_type as retry_unless_exception_type,
)
from .retrying.retry_stops import (
    StopCondition as StopCondition,
)
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
    WaitStrategy as WaitStrategy,
)
from .retrying.retry_waits import (
    as_wait as as_wait,
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
