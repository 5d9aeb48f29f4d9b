"""VNBench value records: haystacks, placed needles, samples, skips and the stage's result.

Times of a :class:`Needle` are seconds of the **rendered** video: an inserted needle shifts
everything after it, an edited one does not. ``haystack_s`` is where the needle sits in the
haystack's own whole-second grid: the second drawn on (edit) or the second it is spliced in
front of (insert; ``haystack.duration_s`` means "after the last second").
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path
from typing import Any, Literal, TypeAlias

from needleforge.errors import NeedleforgeError
from needleforge.records import Bucket, bucket_for
from needleforge.records.questions import N_OPTIONS as N_OPTIONS

Group: TypeAlias = Literal["retrieval", "ordering", "counting"]
Method: TypeAlias = Literal["edit", "insert"]
NeedleKind: TypeAlias = Literal["subtitle", "image", "clip"]


class VNBenchError(NeedleforgeError):
    """VNBench inputs are unusable: no haystack fits, an asset folder is malformed, a font or
    package file is missing, or a plan breaks its own rules (overlapping needles)."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise VNBenchError(message)


@dataclasses.dataclass(frozen=True, slots=True)
class NeedleRegion:
    """A rectangle of the output frame in pixels, where one copy of an image is pasted."""

    x: int
    y: int
    width: int
    height: int

    def __post_init__(self) -> None:
        _check(self.x >= 0 and self.y >= 0 and self.width > 0 and self.height > 0,
               f"region {self} must have x, y >= 0 and a positive size")


@dataclasses.dataclass(frozen=True, slots=True)
class Haystack:
    """Whole seconds ``[start_s, start_s + duration_s)`` of an ingested video."""

    haystack_id: str
    video_id: str
    source: str
    source_sha256: str
    start_s: int
    duration_s: int

    def __post_init__(self) -> None:
        _check(self.start_s >= 0, f"haystack {self.haystack_id}: start_s = {self.start_s} < 0")
        _check(self.duration_s >= 1,
               f"haystack {self.haystack_id}: duration_s = {self.duration_s} < 1")


@dataclasses.dataclass(frozen=True, slots=True)
class Needle:
    """One needle of a sample (see the module docstring for the two time frames).

    ``text`` is what is drawn (subtitles), ``label`` what the needle answers (the name, the
    image or clip label), ``asset`` the image or clip file, ``regions`` where copies of an
    edited image go (Counting-E2); an inserted still fills the frame and has none.
    """

    kind: NeedleKind
    method: Method
    label: str
    haystack_s: int
    start_s: float
    end_s: float
    text: str | None = None
    asset: str | None = None
    regions: tuple[NeedleRegion, ...] = ()

    def __post_init__(self) -> None:
        _check(math.isfinite(self.start_s) and 0 <= self.start_s < self.end_s,
               f"needle {self.label!r}: span [{self.start_s}, {self.end_s}) is empty or negative")
        _check((self.kind == "subtitle") == (self.text is not None),
               f"needle {self.label!r}: subtitles (and only they) carry text")
        _check(self.kind == "subtitle" or self.asset is not None,
               f"needle {self.label!r}: an {self.kind} needle needs its asset file")

    @property
    def copies(self) -> int:
        """How many appearances this needle adds to a count (regions, or 1)."""
        return max(1, len(self.regions))


@dataclasses.dataclass(frozen=True, slots=True)
class VNBenchSample:
    """One generated sample: haystack, needles, question and options (canonical order).

    The 4 tries are the 4 rotations of ``options`` (:meth:`rotation`), so the correct option
    sits under every letter exactly once.
    """

    sample_id: str
    task: str
    group: Group
    needle_kind: NeedleKind
    method: Method
    haystack: Haystack
    needles: tuple[Needle, ...]
    question: str
    options: tuple[str, ...]
    answer_index: int
    duration_s: float
    video: str
    seed: int

    def __post_init__(self) -> None:
        where = f"sample {self.sample_id}"
        _check(len(self.options) == N_OPTIONS, f"{where}: needs {N_OPTIONS} options")
        _check(len({o.strip().casefold() for o in self.options}) == N_OPTIONS,
               f"{where}: options {list(self.options)} are not distinct")
        _check(0 <= self.answer_index < N_OPTIONS, f"{where}: answer_index out of range")
        _check(bool(self.needles), f"{where}: has no needles")
        spans = sorted((n.start_s, n.end_s) for n in self.needles)
        for (_, end), (start, _) in itertools.pairwise(spans):
            _check(end <= start + 1e-9, f"{where}: needles overlap ({spans})")
        _check(spans[-1][1] <= self.duration_s + 1e-6,
               f"{where}: a needle ends after the video ({spans[-1][1]} > {self.duration_s})")

    @property
    def bucket(self) -> Bucket:
        """The length bucket of the rendered video (:func:`~needleforge.records.bucket_for`)."""
        return bucket_for(self.duration_s)

    @property
    def answer(self) -> str:
        """The correct option's text."""
        return self.options[self.answer_index]

    @property
    def needle_type(self) -> str:
        """``<kind>_<method>``, e.g. ``subtitle_edit``, ``image_insert``, ``clip_insert``."""
        return f"{self.needle_kind}_{self.method}"

    @property
    def needle_spans(self) -> tuple[tuple[float, float], ...]:
        """``(start_s, end_s)`` of every needle in the rendered video, in time order."""
        return tuple(sorted((n.start_s, n.end_s) for n in self.needles))

    def rotation(self, try_index: int) -> tuple[tuple[str, ...], int]:
        """Options and answer index of try ``try_index``: the options rotated right by it.

        Raises:
            VNBenchError: for a try outside 0..3.
        """
        _check(0 <= try_index < N_OPTIONS, f"try = {try_index} must be in 0..{N_OPTIONS - 1}")
        shift = try_index % N_OPTIONS
        rotated = self.options[-shift:] + self.options[:-shift] if shift else self.options
        return rotated, (self.answer_index + shift) % N_OPTIONS

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (needles and haystack nested)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class VNBenchSkip:
    """Something the stage left out, and why (``what`` names the task, asset or haystack)."""

    what: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class VNBenchResult:
    """What :func:`~needleforge.vnbench.stage.build_vnbench` produced.

    ``questions`` are the release's multiple-choice rows (4 tries per sample, see
    :mod:`needleforge.records.questions`), ``vnbench_json`` the same tries in the VNBench JSON
    layout; ``videos`` the rendered files (new or already up to date); ``skipped`` every
    sample, name or image left out, with the reason.
    """

    samples: tuple[VNBenchSample, ...]
    questions: tuple[dict[str, Any], ...]
    vnbench_json: tuple[dict[str, Any], ...]
    videos: tuple[Path, ...]
    skipped: tuple[VNBenchSkip, ...]
