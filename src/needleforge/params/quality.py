"""``quality:`` of ``params.yaml``: the thresholds of the quality gate."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class QualityParams(_Section):
    """The quality gate (``needleforge validate``): thresholds of the GX suites.

    ``min_pass_rate`` is the share of verification verdicts that must pass (a verifier that
    rejects most questions signals a broken describer). Licences are checked against
    ``as_of`` (None = today, UTC) and must grant every scope in ``required_scopes``.
    Time columns that must be equal (scenes and segments tiling, spans inside a video) may
    differ by ``tolerance_s``; every piece of a multi-needle answer lasts at least
    ``min_piece_s``. Each failure names at most ``max_examples`` offending rows. Every blind
    baseline (answers from metadata and question text alone, ``quality/bias.py``) may beat
    the random baseline on the release by at most ``blind_margin`` (a fraction: 0.03 = 3
    points), or the release's answers can be guessed without watching it. Every answer
    window of a grounding question lasts at least ``min_answer_window_s``: the release build
    leaves shorter ones out and the gate checks what shipped. Why 3 s (``docs/metrics.md``):
    at tIoU 0.5 a prediction of the right length may be off by a third of the window, 1 s
    for a 3 s window, about one frame step of a model that samples 1 frame a second; a 2 s
    window allows 0.67 s, less than that step, so hitting it says little about grounding.
    """

    min_pass_rate: Annotated[float, Field(ge=0, le=1)] = 0.5
    as_of: dt.date | None = None
    required_scopes: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["benchmark"]
    )
    tolerance_s: Annotated[float, Field(ge=0, le=1)] = 1e-6
    min_piece_s: Annotated[float, Field(ge=0)] = 2.0
    max_examples: Annotated[int, Field(ge=1, le=100)] = 5
    blind_margin: Annotated[float, Field(ge=0, le=1)] = 0.03
    min_answer_window_s: Annotated[float, Field(ge=0, le=3600)] = 3.0

    def today(self) -> dt.date:
        """The day licences are checked against: ``as_of`` when set, else today (UTC)."""
        return self.as_of or dt.datetime.now(dt.UTC).date()
