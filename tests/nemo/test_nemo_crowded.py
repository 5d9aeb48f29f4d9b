"""Negatives first: a scene needle names only terms its negatives can do without, and a
term the verifier could not confirm is dropped and the needle written again."""

from __future__ import annotations

import dataclasses

from nemo_cases import make_tag, make_track, make_video, params, tile

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.backends.writing import Verdict, VerifyRequest
from needleforge.nemo import generate
from needleforge.nemo.negatives import crowded_terms
from needleforge.nemo.tables import index_tables
from needleforge.nemo.targets import Target
from needleforge.records.phrases import named_terms


def _street_and_lectern() -> tuple[list, list, list]:
    """A street (people, cars) among lectern shots (people, a tie) and shelves (books)."""
    scenes = tile([8.0, 6.0, 6.0, 6.0, 6.0, 6.0])
    street, *rest = scenes
    tags = [make_tag(street, "person"), make_tag(street, "car", 0.8)]
    objects = [make_track(street, 0, "person", area=0.01, colour=""),
               make_track(street, 1, "car", area=0.05, colour="")]
    for i, scene in enumerate(rest):
        if i % 2 == 0:
            tags += [make_tag(scene, "person"), make_tag(scene, "tie", 0.7)]
            objects.append(make_track(scene, 0, "person", area=0.2, colour=""))
        else:
            tags.append(make_tag(scene, "book"))
    return scenes, tags, objects


def test_a_term_most_negatives_hold_is_crowded_and_the_rest_is_kept() -> None:
    scenes, tags, objects = _street_and_lectern()
    tables = index_tables(scenes, tags=tags, objects=objects)
    # Without "person": two shelves (12 s) and the street (8 s) fill 20 s; with it too, the
    # shelves alone would still do, so nothing is crowded at 20 s ...
    assert crowded_terms(Target("scene", scenes[0]), tables, params=params()) == frozenset()
    # ... but at 21 s the lectern shots are needed: "person" is crowded, "car" is not.
    assert crowded_terms(Target("scene", scenes[0]), tables,
                         params=params(short_min_s=21.0)) == {"person"}


def test_nothing_is_crowded_for_object_needles_or_when_no_montage_could_be_filled() -> None:
    scenes, tags, objects = _street_and_lectern()
    tables = index_tables(scenes, tags=tags, objects=objects)
    car = Target("object", scenes[0], objects[1])
    assert crowded_terms(car, tables, params=params(short_min_s=21.0)) == frozenset()
    assert crowded_terms(Target("scene", scenes[0]), tables,
                         params=params(short_min_s=60.0)) == frozenset()


def test_the_street_is_asked_about_by_its_cars_not_its_people() -> None:
    scenes, tags, objects = _street_and_lectern()
    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=objects,
                      params=params(short_min_s=21.0, min_scene_tags=1),
                      describer=EmbeddedDescriber(), verifier=EmbeddedVerifier())
    [street] = [q for q in result.questions if q.target_scene_id == scenes[0].scene_id
                and q.needle_type == "scene"]
    assert "car" in street.description and "people" not in street.description.lower()
    assert street in result.releasable()


@dataclasses.dataclass
class _NoFridges:
    """A verifier whose second look finds no refrigerator anywhere (as the looking verifier
    found on a fish tank); everything else the tables back passes."""

    asked: list[str] = dataclasses.field(default_factory=list)
    name: str = "no-fridges"
    version: str = "1"

    def verify(self, request: VerifyRequest) -> Verdict:
        self.asked.append(request.description)
        if "refrigerator" in named_terms(request.description, ("refrigerator",)):
            return Verdict(False, "unconfirmed: 'refrigerator'", unconfirmed="refrigerator")
        return EmbeddedVerifier().verify(request)


def test_a_term_no_second_look_confirms_is_dropped_and_the_needle_written_again() -> None:
    scenes = tile([8.0, 6.0, 6.0, 6.0])
    tags = [make_tag(scenes[0], "refrigerator"), make_tag(scenes[0], "cup", 0.8),
            make_tag(scenes[1], "dog"), make_tag(scenes[2], "tree"), make_tag(scenes[3], "car")]
    verifier = _NoFridges()
    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                      params=params(short_min_s=14.0), describer=EmbeddedDescriber(),
                      verifier=verifier)
    [question] = [q for q in result.questions if q.target_scene_id == scenes[0].scene_id]
    assert "refrigerator" in verifier.asked[0] and "cup" in verifier.asked[0]
    assert "refrigerator" not in question.description and "cup" in question.description
    assert question in result.releasable()
    montage = next(m for m in result.montages if m.montage_id == question.montage_id)
    assert question.question_id.startswith("q") and montage.segments


def test_a_needle_with_nothing_left_to_say_keeps_its_refusal() -> None:
    scenes = tile([8.0, 6.0, 6.0, 6.0])
    tags = [make_tag(scenes[0], "refrigerator"), make_tag(scenes[1], "dog"),
            make_tag(scenes[2], "tree"), make_tag(scenes[3], "car")]
    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                      params=params(short_min_s=14.0, min_scene_tags=1),
                      describer=EmbeddedDescriber(), verifier=_NoFridges())
    [verdict] = [v for v, q in zip(result.verifications, result.questions, strict=True)
                 if q.target_scene_id == scenes[0].scene_id]
    assert not verdict.passed and "refrigerator" in verdict.reason


def test_a_black_and_white_question_takes_no_negative_a_viewer_could_take_for_grey() -> None:
    """Negatives of "a black-and-white scene" are chosen among scenes whose frames are clearly
    in colour, by the looking verifier's own rule, so its verdict does not refuse the plan."""
    import numpy as np

    from needleforge.backends.base import Keyframe

    scenes = tile([8.0, 6.0, 6.0, 6.0, 6.0])
    tags = [make_tag(scenes[0], "black-and-white"), make_tag(scenes[1], "dog"),
            make_tag(scenes[2], "tree"), make_tag(scenes[3], "car"), make_tag(scenes[4], "cup")]
    rng = np.random.default_rng(0)
    colour = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    grey = np.repeat(rng.integers(0, 256, (48, 64, 1), dtype=np.uint8), 3, axis=2)
    nearly = grey.copy()
    nearly[:4, :, 0] = 255  # a sliver of colour: the 99th percentile passes, the share not

    def frames(scene):  # type: ignore[no-untyped-def]
        image = {0: grey, 2: nearly}.get(scene.index, colour)
        return [Keyframe(scene.start_s + 0.5, image)]

    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=[],
                      params=params(short_min_s=14.0, min_scene_tags=1, check={"setup": False}),
                      describer=EmbeddedDescriber(), verifier=EmbeddedVerifier(),
                      keyframes=frames)
    [question] = [q for q in result.questions if q.target_scene_id == scenes[0].scene_id]
    montage = next(m for m in result.montages if m.montage_id == question.montage_id)
    used = {s.scene_id for s in montage.segments if s.role == "negative"}
    assert "black-and-white" in question.description
    assert scenes[2].scene_id not in used and len(used) >= 2
