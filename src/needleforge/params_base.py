"""The base of every ``params.yaml`` section model: unknown keys are errors, values frozen.

A leaf module, so section models can live beside the stage they configure
(:mod:`needleforge.expand_params`) and still be gathered by :mod:`needleforge.config`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A ``params.yaml`` section: unknown keys are errors naming them; instances are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
