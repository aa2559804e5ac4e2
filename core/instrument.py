"""The public path of :mod:`batonflow.core.instruments.instrument` (its code moved into the ``instruments`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.instrument"``: stored runs and pickles name them so.
"""

from .instruments.instrument import (
    PRINT_STYLES as PRINT_STYLES,
)
from .instruments.instrument import (
    EventEmitted as EventEmitted,
)
from .instruments.instrument import (
    EventsJoined as EventsJoined,
)
from .instruments.instrument import (
    Instrument as Instrument,
)
from .instruments.instrument import (
    InstrumentSet as InstrumentSet,
)
from .instruments.instrument import (
    PrintingInstrument as PrintingInstrument,
)
from .instruments.instrument import (
    RunFinished as RunFinished,
)
from .instruments.instrument import (
    RunStarted as RunStarted,
)
from .instruments.instrument import (
    StepFinished as StepFinished,
)
from .instruments.instrument import (
    StepStarted as StepStarted,
)
from .instruments.instrument import __all__ as __all__
from .instruments.instrument import (
    add_global_instrument as add_global_instrument,
)
from .instruments.instrument import (
    global_instruments as global_instruments,
)
from .instruments.instrument import (
    remove_global_instrument as remove_global_instrument,
)
