"""The studio stage: the embedded sample corpus (real package clips + synthetic programs)."""

from __future__ import annotations

from pathlib import Path

from needleforge.params import Params
from needleforge.studio import StudioReport, build_studio


def studio_corpus(*, out: Path, params: Params) -> StudioReport:
    """Write the sample corpus of ``params.studio`` into ``out`` (byte-identical for the same
    params): videos, SRT narration, the authorization manifest and the ground truth.

    Raises:
        StudioError / MediaError: see :func:`needleforge.studio.build_studio`.
    """
    return build_studio(params.studio, out)
