"""Records of NeMo generation: montage segments, montages, questions, verifications."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Literal, TypeAlias

from needleforge.records.base import _check, _finite_nonneg, _Record
from needleforge.records.questions import Bucket, bucket_for
from needleforge.records.representation import Box

NeedleType: TypeAlias = Literal["object", "scene"]
Role: TypeAlias = Literal["target", "negative"]
_TILE_EPS_S = 1e-6


@dataclasses.dataclass(frozen=True, slots=True)
class Segment(_Record):
    """One piece of a montage: ``[src_start_s, src_end_s)`` of scene ``scene_id``.

    ``montage_start_s`` is where it starts in the montage; ``needle_index`` numbers the target
    segments of one question (0, 1, …) and is None for negatives. ``target_id`` names the
    target (scene or object id) a target segment belongs to, so a long montage can carry the
    needles of several questions; None means "the montage's only target".
    """

    position: int
    video_id: str
    scene_id: str
    src_start_s: float
    src_end_s: float
    montage_start_s: float
    role: Role
    needle_index: int | None = None
    target_id: str | None = None

    def __post_init__(self) -> None:
        _check(self.position >= 0, f"position = {self.position} must be >= 0")
        _check(self.role == "target" or self.target_id is None,
               f"segment {self.position}: a negative carries no target_id")
        _finite_nonneg("src_start_s", self.src_start_s)
        _finite_nonneg("montage_start_s", self.montage_start_s)
        _check(self.src_end_s > self.src_start_s,
               f"segment {self.position}: src_end_s = {self.src_end_s} must be > "
               f"src_start_s = {self.src_start_s}")
        _check((self.role == "target") == (self.needle_index is not None),
               f"segment {self.position}: role {self.role!r} with needle_index "
               f"{self.needle_index!r} (targets carry one, negatives none)")

    @property
    def duration_s(self) -> float:
        return self.src_end_s - self.src_start_s

    @property
    def montage_end_s(self) -> float:
        return self.montage_start_s + self.duration_s


@dataclasses.dataclass(frozen=True, slots=True)
class Montage(_Record):
    """An ordered list of segments that tile ``[0, duration_s)`` with no gap or overlap."""

    montage_id: str
    bucket: Bucket
    segments: tuple[Segment, ...]
    seed: int

    def __post_init__(self) -> None:
        _check(len(self.segments) > 0, f"montage {self.montage_id}: has no segments")
        clock = 0.0
        for i, seg in enumerate(self.segments):
            _check(seg.position == i, f"montage {self.montage_id}: segment {i} has position "
                   f"{seg.position}")
            _check(abs(seg.montage_start_s - clock) <= _TILE_EPS_S,
                   f"montage {self.montage_id}: segment {i} starts at {seg.montage_start_s} "
                   f"but the previous one ends at {clock} (segments must tile the montage)")
            clock = seg.montage_end_s
        _check(bucket_for(self.duration_s) == self.bucket,
               f"montage {self.montage_id}: duration {self.duration_s:.2f} s is not in "
               f"bucket {self.bucket!r}")

    @property
    def duration_s(self) -> float:
        return self.segments[-1].montage_end_s

    def target_spans(self, target_id: str | None = None) -> list[tuple[float, float]]:
        """``(start_s, end_s)`` in the montage of the target segments, in needle order.

        With ``target_id``, only the segments of that target (a montage with several targets
        answers each question separately); without, every target segment.
        """
        targets = sorted((s for s in self.segments if s.role == "target"
                          and (target_id is None or s.target_id == target_id)),
                         key=lambda s: (s.needle_index or 0))
        return [(s.montage_start_s, s.montage_end_s) for s in targets]


@dataclasses.dataclass(frozen=True, slots=True)
class Question(_Record):
    """A needle grounding question about the target segments of one montage.

    ``description`` is the written object description (a noun phrase) or scene description
    the question is built from; ``text`` is the question asked. The answer is not stored: it
    is :meth:`Montage.target_spans` of ``montage_id``.
    """

    question_id: str
    montage_id: str
    needle_type: NeedleType
    target_scene_id: str
    target_object_id: str | None
    description: str
    text: str
    template_id: str
    backend: str
    model_version: str

    def __post_init__(self) -> None:
        _check(bool(self.text.strip()), f"question {self.question_id}: text is empty")
        _check(bool(self.description.strip()),
               f"question {self.question_id}: description is empty")
        _check((self.needle_type == "object") == (self.target_object_id is not None),
               f"question {self.question_id}: needle_type {self.needle_type!r} with "
               f"target_object_id {self.target_object_id!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class Verification(_Record):
    """A verifier's verdict on one question; only passed questions are releasable."""

    question_id: str
    verifier: str
    model_version: str
    passed: bool
    reason: str

    def __post_init__(self) -> None:
        _check(bool(self.reason.strip()),
               f"verification of {self.question_id}: a verdict needs a reason")


def verdicts_pass(verdicts: Collection[Verification], *, require_all: bool) -> bool:
    """Whether one question's ``verdicts`` (at least one) pass it: every verifier passed it
    (``require_all``), or any did. The release's rule, which the render stage shares."""
    return all(v.passed for v in verdicts) if require_all else any(v.passed for v in verdicts)


@dataclasses.dataclass(frozen=True, slots=True)
class Sighting:
    """The best detection of ``label`` (normalized) the negative check made in scene
    ``scene_id`` (:mod:`needleforge.nemo.checks.negative_scan`)."""

    scene_id: str
    label: str
    score: float
    t_s: float
    box: Box

    def __post_init__(self) -> None:
        _check(bool(self.label.strip()), f"sighting in {self.scene_id}: empty label")
        _check(0.0 <= self.score <= 1.0,
               f"sighting of {self.label!r} in {self.scene_id}: score = {self.score!r} "
               "must be in [0, 1]")
        _finite_nonneg(f"sighting of {self.label!r} in {self.scene_id}: t_s", self.t_s)

    def describe(self) -> str:
        """One line for logs and skip reasons: what, where, how sure."""
        return (f"{self.label} at {self.t_s:.1f} s (score {self.score:.2f}, box "
                f"{self.box.w * 100:.0f}x{self.box.h * 100:.0f} % of the frame)")


@dataclasses.dataclass(frozen=True, slots=True)
class SceneScan:
    """What the probe ``probe_key`` saw in scene ``scene_id``: ``n_frames`` frames looked at
    and the best sighting of each label at or above its threshold (sorted by label)."""

    scene_id: str
    probe_key: str
    n_frames: int
    sightings: tuple[Sighting, ...]

    def __post_init__(self) -> None:
        _check(self.n_frames >= 0,
               f"scan of {self.scene_id}: n_frames = {self.n_frames} must be >= 0")
        strays = sorted({s.scene_id for s in self.sightings if s.scene_id != self.scene_id})
        _check(not strays, f"scan of {self.scene_id} holds sightings of {strays}")
        labels = [s.label for s in self.sightings]
        _check(len(labels) == len(set(labels)),
               f"scan of {self.scene_id}: one sighting per label, got {labels}")
