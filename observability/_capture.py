"""The opt-in for recording content (prompts, completions, inputs, outputs) on spans."""

from __future__ import annotations

import os
from collections.abc import Mapping

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content_from_env(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for content."""
    return environ.get(CAPTURE_ENV, "").strip().lower() in ("true", "1", "yes")
