"""A needle the verifier refused for what a negative shows is planned again without that
negative: the verifier looks where the tables and the probe did not (a race car on one frame
of an archival film), and a refused negative says nothing against the target's question."""

from __future__ import annotations

import dataclasses

from nemo_cases import make_tag, make_video, params, tile

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.backends.writing import Verdict, VerifyRequest
from needleforge.nemo import generate
from needleforge.nemo.generate import MAX_REPLANS


@dataclasses.dataclass
class _SeesCarsIn:
    """A verifier whose second look finds a car in the ``refused`` scenes (the tables say
    nothing of it there); everything else the tables back passes."""

    refused: frozenset[str]
    asked: list[tuple[str, tuple[str, ...]]] = dataclasses.field(default_factory=list)
    name: str = "sees-cars"
    version: str = "1"

    def verify(self, request: VerifyRequest) -> Verdict:
        ids = tuple(n.scene.scene_id for n in request.negatives)
        self.asked.append((request.target.scene.scene_id, ids))
        shown = tuple(i for i in ids if i in self.refused)
        if shown:
            return Verdict(False, f"refused by negative-redetect: negative {shown[0]} shows "
                                  f"'car'", refused_negatives=shown)
        return EmbeddedVerifier().verify(request)


def _street(n_others: int) -> tuple[list, list]:
    """A street with cars (8 s) and ``n_others`` 6 s shots of other things."""
    scenes = tile([8.0] + [6.0] * n_others)
    things = ["dog", "tree", "cup", "book", "clock", "vase"]
    tags = [make_tag(scenes[0], "car")] + [make_tag(s, things[i % len(things)])
                                           for i, s in enumerate(scenes[1:])]
    return scenes, tags


def _street_question(result, scenes):  # type: ignore[no-untyped-def]
    [(question, verdict)] = [(q, v) for q, v in zip(result.questions, result.verifications,
                                                     strict=True)
                             if q.target_scene_id == scenes[0].scene_id]
    montage = next(m for m in result.montages if m.montage_id == question.montage_id)
    return question, verdict, {s.scene_id for s in montage.segments if s.role == "negative"}


def test_a_negative_the_verifier_refused_is_left_out_and_the_montage_planned_again() -> None:
    scenes, tags = _street(6)
    first = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                     params=params(short_min_s=14.0, short_max_s=27.0, min_scene_tags=1),
                     describer=EmbeddedDescriber(), verifier=EmbeddedVerifier())
    _, _, drawn = _street_question(first, scenes)
    refused = frozenset(sorted(drawn)[:1])  # one of the negatives the plan draws shows a car
    verifier = _SeesCarsIn(refused)
    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                      params=params(short_min_s=14.0, short_max_s=27.0, min_scene_tags=1),
                      describer=EmbeddedDescriber(), verifier=verifier)
    question, verdict, used = _street_question(result, scenes)
    assert verdict.passed and question in result.releasable()
    assert not used & refused and len(used) >= 2
    [gone] = refused
    assert verdict.reason.startswith(f"planned again without {gone} (refused by "
                                     f"negative-redetect: negative {gone} shows 'car'); ")
    street_asks = [ids for target, ids in verifier.asked if target == scenes[0].scene_id]
    assert len(street_asks) == 2  # the first montage, then the one planned again
    assert gone in street_asks[0] and set(street_asks[1]) == used


def test_too_few_negatives_left_keeps_the_refusal() -> None:
    """Three shots of other things: without the refused one, 12 s of negatives cannot fill a
    21 s montage, so the question stays made and refused, as before."""
    scenes, tags = _street(3)
    everyone = frozenset(s.scene_id for s in scenes[1:2])
    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                      params=params(short_min_s=21.0, min_scene_tags=1),
                      describer=EmbeddedDescriber(), verifier=_SeesCarsIn(everyone))
    question, verdict, used = _street_question(result, scenes)
    assert not verdict.passed and question not in result.releasable()
    assert "planned again" not in verdict.reason and used & everyone


def test_a_needle_is_planned_again_at_most_max_replans_times() -> None:
    """Every other shot shows a car to the verifier: each plan is refused, and the stage
    stops after MAX_REPLANS new plans, keeping the last refusal."""
    scenes, tags = _street(6)
    verifier = _SeesCarsIn(frozenset(s.scene_id for s in scenes[1:]))
    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                      params=params(short_min_s=14.0, short_max_s=27.0, min_scene_tags=1),
                      describer=EmbeddedDescriber(), verifier=verifier)
    _, verdict, _ = _street_question(result, scenes)
    assert not verdict.passed
    assert verdict.reason.count("planned again without") == MAX_REPLANS
    street = [ids for target, ids in verifier.asked if target == scenes[0].scene_id]
    assert len(street) == 1 + MAX_REPLANS
    assert not set(street[0]) & set(street[1])


def test_returning_shots_of_a_refused_negative_are_left_out_too() -> None:
    """The race film was refused for a car on one frame; another shot of the same film (the
    same camera set-up) shows the same car, so the new plan takes neither."""
    import pytest

    from needleforge.backends.base import Keyframe
    from needleforge.errors import StudioError
    from needleforge.studio.real_assets import sample_frames

    clips = ["pedestrians", "race1906", "tree", "race1906", "race1906", "lego", "race1906"]
    try:
        images = {name: sample_frames(name, every=25, most=3) for name in set(clips)}
    except StudioError as err:
        pytest.skip(f"a real clip is not installed: {err}")
    scenes, tags = _street(6)
    race = {scenes[i].scene_id for i, name in enumerate(clips) if name == "race1906"}

    def frames(scene):  # type: ignore[no-untyped-def]
        return [Keyframe(scene.start_s + 0.5 + k, image)
                for k, image in enumerate(images[clips[scene.index]])]

    def run(verifier):  # type: ignore[no-untyped-def]
        return generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                        params=params(short_min_s=14.0, short_max_s=33.0, min_scene_tags=1),
                        describer=EmbeddedDescriber(), verifier=verifier, keyframes=frames)

    _, _, drawn = _street_question(run(EmbeddedVerifier()), scenes)
    assert drawn & race, "the seeded draw must take a race-film shot for this test"
    refused = frozenset(sorted(drawn & race)[:1])
    _, verdict, used = _street_question(run(_SeesCarsIn(refused)), scenes)
    assert verdict.passed and "planned again without" in verdict.reason
    assert not used & race and len(used) >= 2
