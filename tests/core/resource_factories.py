"""Factories defined in their own module, for the annotation-scope tests of test_resource_nesting.

``Settings`` here is what ``settings_factory``'s annotation means, whatever a test module calls
``Settings`` locally.
"""

from __future__ import annotations

from typing import Annotated, Any

from batonflow.core import Resource, ResourceConfig
from pydantic import BaseModel


class Settings(BaseModel):
    name: str


def settings_factory(path: str) -> Resource[Any]:
    """A resource whose factory reads ``Settings`` from the JSON file at ``path``."""

    def read(settings: Annotated[Settings, ResourceConfig(config_file=path)]) -> dict[str, str]:
        return {"name": settings.name, "type": type(settings).__qualname__}

    return Resource(read)
