"""One failure policy: what a stage could not do, named the same way by every caller.

Stage functions record their successes and return their failures (a refused manifest row, a
video that failed to decode or represent) instead of stopping the run or only printing them.
:class:`StageFailure` is the one shape those failures take once they leave a stage, so the
flows' return values, the refresh's Prefect artifact, the changelog and the release card
all name them alike: the stage, the source as the user wrote it, a reason word and the detail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from needleforge.records import IngestRejection, Video


@dataclasses.dataclass(frozen=True, slots=True)
class StageFailure:
    """One item a stage could not process.

    ``item`` names the source as its owner knows it (manifest row and path, or a video's
    source path and id); ``new`` is False for a refusal the store already held before this
    run (the same manifest row refused again), so a rerun can tell old news from new.
    """

    stage: str
    item: str
    reason: str
    detail: str
    new: bool = True

    def __post_init__(self) -> None:
        if not self.stage or not self.item or not self.reason:
            raise ValueError(f"a failure needs a stage, an item and a reason, got {self!r}")

    def to_text(self) -> str:
        """One line: ``stage: item: reason (detail)``."""
        return f"{self.stage}: {self.item}: {self.reason} ({self.detail})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, for flow return values and artifacts."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageFailure:
        """The inverse of :meth:`to_dict`.

        Raises:
            ValueError: a key is missing or empty.
        """
        try:
            return cls(str(data["stage"]), str(data["item"]), str(data["reason"]),
                       str(data.get("detail", "")), bool(data.get("new", True)))
        except KeyError as err:
            raise ValueError(f"failure record {dict(data)!r} lacks {err}") from None


def from_rejection(rejection: IngestRejection, *, new: bool = True) -> StageFailure:
    """A refused manifest row, named by the manifest's file name, row number and source."""
    manifest = PurePath(rejection.manifest_path).name
    item = f"{manifest} row {rejection.row} ({rejection.source_path})"
    return StageFailure("ingest", item, rejection.reason, rejection.detail, new)


def from_represent(video_id: str, error: str, *, videos: Mapping[str, Video]) -> StageFailure:
    """A video the represent stage could not finish, named by its source path and id."""
    video = videos.get(video_id)
    item = f"{video.source_path} ({video_id})" if video is not None else video_id
    return StageFailure("represent", item, "represent_failed", error)


def summarize(failures: Iterable[StageFailure], *, limit: int = 10) -> str:
    """The failures as lines for an error message: at most ``limit``, then how many more."""
    items = list(failures)
    lines = [f"  - {f.to_text()}" for f in items[:limit]]
    if len(items) > limit:
        lines.append(f"  - … and {len(items) - limit} more")
    return "\n".join(lines)
