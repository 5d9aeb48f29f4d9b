"""``nemo:`` of ``params.yaml``: NeMo stage 2, and the checks of its negatives (``nemo.check``).

``nemo.check`` was once 17 flat ``check_*`` keys of ``nemo``; :data:`MOVED_KEYS` names each old
key's new place, so a params file still setting one is refused with that place named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from needleforge.params.base import ParamsSection as _Section

#: Labels too broad to ground as an object needle (NeMo Table 15: "the sky, sidewalk, slope").
DEFAULT_ABSTRACT_LABELS: tuple[str, ...] = (
    "background", "ceiling", "cloud", "dirt", "field", "floor", "grass", "ground", "ocean",
    "pavement", "road", "sand", "sea", "shadow", "sidewalk", "sky", "slope", "snow", "street",
    "wall", "water",
)


class NegativeCheckParams(_Section):
    """The checks of stage 2's negatives (``nemo.check``), each looking again, harder.

    ``negatives`` (named so, not ``enabled``: ``attire`` and ``setup`` apply without it) looks
    again at each negative candidate of an object target for the target's label
    (:mod:`needleforge.nemo.checks.negative_scan`): frames at most
    ``every_s`` apart (scaled to ``max_side`` pixels), detected by ``detector`` at
    ``min_score`` with its input upscaled ``input_scale`` times (detectors that take
    ``input_scale``), optionally cut into ``cols`` x ``rows`` tiles overlapping by
    ``overlap``; a scene where the label is seen is passed over (the representation pass
    misses small and brief objects; a negative showing one makes the answer wrong). With
    ``changed_only`` both checks look only at what changed since the scene's earlier frames
    (:mod:`needleforge.nemo.checks.change_gate`). The defaults (a frame a second at 2x) are what
    ``benchmarks/validity.py`` measures as valid. ``instances`` also searches each such
    negative for the target object's own pixels (:mod:`needleforge.nemo.checks.instance`; a
    normalised cross-correlation of ``instance_min_score`` or more refuses it; it needs
    ``negatives``), ``coarse-to-fine`` or ``exhaustive`` (``instance_search``).
    ``pose`` counts a whole frame showing a body pose (MoveNet) as a person sighting.
    ``attire``: a person the question describes by clothing colour excludes only people
    who could be dressed so (:mod:`needleforge.records.attire`), not every person.
    ``family_look``: a faint bird or dog sighting (under the verifier's 0.5) that the ImageNet
    classifier, shown its box, calls something else is no sighting
    (:class:`~needleforge.nemo.checks.build.FamilyLook`: larval fish seen as birds).
    ``setup``: a negative showing a scene target's own camera set-up (a returning shot)
    is passed over (:mod:`needleforge.nemo.checks.same_setup`; needs keyframes; object
    targets have the probe's label and instance checks).
    """

    negatives: bool = True
    every_s: Annotated[float, Field(gt=0, le=60)] = 1.0
    max_side: Annotated[int, Field(ge=64, le=4096)] = 640
    input_scale: Annotated[float, Field(ge=0.25, le=4)] = 2.0
    cols: Annotated[int, Field(ge=1, le=8)] = 1
    rows: Annotated[int, Field(ge=1, le=8)] = 1
    overlap: Annotated[float, Field(ge=0, le=0.9)] = 0.2
    min_score: Annotated[float, Field(ge=0, le=1)] = 0.3
    detector: Annotated[str, Field(min_length=1)] = "embedded"
    detector_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    changed_only: bool = True
    instances: bool = True
    pose: bool = True
    attire: bool = True
    family_look: bool = True
    setup: bool = True
    instance_min_score: Annotated[float, Field(gt=0, le=1)] = 0.8
    instance_search: Literal["coarse-to-fine", "exhaustive"] = "coarse-to-fine"


#: Checks added after the nesting: they never had a flat key.
NESTED_ONLY = frozenset({"family_look"})
#: Old key of ``nemo`` -> its place now (``check_every_s`` -> ``check.every_s``).
MOVED_KEYS: Mapping[str, str] = {f"check_{key}": f"check.{key}"
                                 for key in NegativeCheckParams.model_fields
                                 if key not in NESTED_ONLY}


class NemoParams(_Section):
    """NeMo Stage 2 (``needleforge generate``): targets, negatives, short montage plans.

    A target scene lasts longer than ``min_scene_s``; its object needle is the most prominent
    object visible for at least ``min_visible_s`` with a mean box area in
    ``[min_area_frac, max_area_frac]`` of the frame (seed 001, App. D.2). A scene needle also
    needs ``min_scene_tags`` distinct tags and is described by up to ``scene_top_tags`` of
    them. The paper's 5 s / 4 s / two tags suit films; broadcast footage cuts every 2-5 s (25
    of 41 shots of our first real programs were <= 5 s), so the defaults are 2.5 s, 2 s (three
    keyframes a second apart, with half a second to spare) and one tag the verifier can check.
    (A 3 s floor dropped every shot cut at exactly 3 s, such as the real set's car-phone
    close-ups: 18 shots of its nine programs, seed 0.) A negative may hold nothing
    the written question names; terms held by more than ``common_term_share`` of a video's
    scenes (a "person" in nearly every shot) are common there, and describers leave them out,
    as they leave out a term that would leave a target too few negatives
    (:func:`~needleforge.nemo.negatives.crowded_terms`). Each short montage draws its length
    uniformly from ``[short_min_s, short_max_s]`` and fills it with whole negative scenes of at
    least ``min_negative_s``; a target that cannot reach ``short_min_s`` with ``min_negatives`` or
    more negatives is skipped. ``max_targets`` caps the targets (0 = all), sampled with
    ``seed``. ``describer``/``verifier`` name backends; their ``*_options`` go to the factory.
    ``check`` holds the checks of the negatives (:class:`NegativeCheckParams`).
    """

    seed: int = 0
    min_scene_s: Annotated[float, Field(ge=0)] = 2.5
    min_visible_s: Annotated[float, Field(ge=0)] = 2.0
    min_area_frac: Annotated[float, Field(ge=0, le=1)] = 0.05
    max_area_frac: Annotated[float, Field(gt=0, le=1)] = 0.25
    min_scene_tags: Annotated[int, Field(ge=1)] = 1
    scene_top_tags: Annotated[int, Field(ge=1, le=20)] = 3
    common_term_share: Annotated[float, Field(gt=0, le=1)] = 0.5
    short_min_s: Annotated[float, Field(gt=0, lt=150)] = 20.0
    short_max_s: Annotated[float, Field(gt=0, lt=150)] = 140.0
    min_negative_s: Annotated[float, Field(gt=0)] = 1.0
    min_negatives: Annotated[int, Field(ge=1)] = 2
    max_targets: Annotated[int, Field(ge=0)] = 0
    describer: Annotated[str, Field(min_length=1)] = "embedded"
    verifier: Annotated[str, Field(min_length=1)] = "embedded"
    describer_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    verifier_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    abstract_labels: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: list(DEFAULT_ABSTRACT_LABELS)
    )
    check: NegativeCheckParams = Field(default_factory=NegativeCheckParams)

    @model_validator(mode="after")
    def _ranges(self) -> NemoParams:
        if self.max_area_frac < self.min_area_frac:
            raise ValueError(f"max_area_frac = {self.max_area_frac} must be >= "
                             f"min_area_frac = {self.min_area_frac}")
        if self.short_max_s < self.short_min_s:
            raise ValueError(f"short_max_s = {self.short_max_s} must be >= "
                             f"short_min_s = {self.short_min_s}")
        return self

    def with_check(self, **changes: Any) -> NemoParams:
        """A copy with these ``check`` fields changed, validated (``model_copy(update=...)``
        would keep a nested mapping as it is, unchecked).

        Raises:
            pydantic.ValidationError: an unknown field, or a value out of its range.
        """
        check = NegativeCheckParams.model_validate(self.check.model_dump() | changes)
        return self.model_copy(update={"check": check})
