"""Every test here needs psycopg (the postgres extra) and the throw-away server."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="pip install 'batonflow[postgres]'")
