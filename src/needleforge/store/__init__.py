"""The DuckDB store: schema, migrations and typed read/write helpers."""

from needleforge.store.db import Store
from needleforge.store.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "Store"]
