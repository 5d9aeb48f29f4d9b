"""``release:`` of ``params.yaml``: what a release ships, and under which licences."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class ReleaseParams(_Section):
    """What ``needleforge release`` puts in ``releases/<name>/`` and how.

    Only questions whose verdicts passed are released: with ``require_all_verdicts`` every
    verifier that judged a question must have passed it (else one pass is enough). A question
    no verifier judged is left out unless ``include_unverified``; a failed one never ships.
    ``include_videos`` copies the rendered montages in (``link_mode``: a hard link, falling back
    to a copy across file systems, or always a copy); without it, or without renders, the
    release ships plans only. ``top_n_labels`` and ``histogram_bins`` shape the card's plots.
    ``release_date`` is the only date a release carries (none by default), so building the
    same inputs twice gives byte-identical files.

    Authorization: a source ships only while its licence is valid on the release day
    (``release_date``, else the build day, UTC) and grants every scope in ``required_scopes``;
    questions built on any other source are left out with the reason listed
    (``unauthorized: exclude``) or stop the build (``error``). Contamination: sources already
    used by the earlier releases the build compares against (by sha256) are flagged, and
    with ``exclude_contaminated`` their questions are left out too.
    """

    title: Annotated[str, Field(min_length=1)] = "needleforge benchmark"
    include_videos: bool = True
    include_unverified: bool = False
    require_all_verdicts: bool = True
    link_mode: Literal["hardlink", "copy"] = "hardlink"
    top_n_labels: Annotated[int, Field(ge=1, le=200)] = 20
    histogram_bins: Annotated[int, Field(ge=1, le=200)] = 20
    release_date: dt.date | None = None
    required_scopes: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["benchmark"], min_length=1
    )
    unauthorized: Literal["exclude", "error"] = "exclude"
    exclude_contaminated: bool = False
    # Human verdicts (needleforge review --from label-studio | yaml): which questions must have
    # a human decision to ship — none, all, or a seeded fraction (release/human_review.py). A
    # question humans judged invalid never ships; a corrected answer ships as corrected.
    require_human_review: Literal["none", "all"] | Annotated[float, Field(gt=0, lt=1)] = "none"
    human_review_seed: int = 0

    def check_day(self) -> dt.date:
        """The day source licences must still be valid on: ``release_date``, else today (UTC)."""
        return self.release_date or dt.datetime.now(dt.UTC).date()
