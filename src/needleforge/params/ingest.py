"""``ingest:`` of ``params.yaml``: who may be ingested and how files are stored."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class IngestParams(_Section):
    """Authorization policy and storage for ``needleforge ingest``."""

    required_scopes: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["benchmark"]
    )
    as_of: dt.date | None = None
    link_mode: Literal["hardlink", "copy", "symlink"] = "hardlink"
    workers: Annotated[int, Field(ge=1, le=64)] = 2

    def today(self) -> dt.date:
        """The day licences are checked against: ``as_of`` when set, else today (UTC)."""
        return self.as_of or dt.datetime.now(dt.UTC).date()
