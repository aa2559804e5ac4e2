"""The public path of :mod:`batonflow.core.retrying.retry_conditions` (its code moved into the ``retrying`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.retry_conditions"``: stored runs and pickles name them so.
"""

from .retrying._tenacity import (
    call_state as call_state,
)
from .retrying._tenacity import (
    is_call_state as is_call_state,
)
from .retrying._tenacity import (
    state_error as state_error,
)
from .retrying._tenacity import (
    tenacity_kind as tenacity_kind,
)
from .retrying.retry_conditions import (
    ExceptionTypes as ExceptionTypes,
)
from .retrying.retry_conditions import (
    RetryCondition as RetryCondition,
)
from .retrying.retry_conditions import __all__ as __all__
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
