"""The public path of :mod:`batonflow.core.durable.stores` (its code moved into the ``durable`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.stores"``: stored runs and pickles name them so.
"""

from .durable._sqlite_store import (
    SqliteCheckpointStore as SqliteCheckpointStore,
)
from .durable.checkpoints import (
    CheckpointStore as CheckpointStore,
)
from .durable.stores import (
    DATABASE_URL_ENV as DATABASE_URL_ENV,
)
from .durable.stores import (
    ENTRY_POINT_GROUP as ENTRY_POINT_GROUP,
)
from .durable.stores import __all__ as __all__
from .durable.stores import (
    database_url as database_url,
)
from .durable.stores import (
    open_store as open_store,
)
from .errors import (
    CheckpointError as CheckpointError,
)
