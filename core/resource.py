"""The public path of :mod:`batonflow.core.engine.resource` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.resource"``: stored runs and pickles name them so.
"""

from .engine.resource import (
    Resource as Resource,
)
from .engine.resource import (
    ResourceConfig as ResourceConfig,
)
from .engine.resource import (
    ResourceDescriptor as ResourceDescriptor,
)
from .engine.resource import (
    ResourceManager as ResourceManager,
)
from .engine.resource import (
    ResourceParam as ResourceParam,
)
from .engine.resource import (
    Scope as Scope,
)
from .engine.resource import (
    T as T,
)
from .engine.resource import __all__ as __all__
from .engine.resource import (
    nested_configs as nested_configs,
)
from .engine.resource import (
    resource_params as resource_params,
)
from .errors import (
    ConfigFileNotFoundError as ConfigFileNotFoundError,
)
from .errors import (
    ResourceCycleError as ResourceCycleError,
)
from .errors import (
    ResourceError as ResourceError,
)
from .errors import (
    ResourceFileNotFoundError as ResourceFileNotFoundError,
)
from .errors import (
    WorkflowConfigurationError as WorkflowConfigurationError,
)
