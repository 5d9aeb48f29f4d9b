"""The mostly-one-colour scene question, written and verified: the measure's tag becomes a
described scene, the looking verifier measures it again on frames the writer did not use, and
a negative a viewer could take for that colour refuses it. Frames: the Lego model on its
orange backdrop against the coin on a white table, the towers at night and the cat on its
yellow-lit bed."""

from __future__ import annotations

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber, verify_scene
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.records import SceneTag
from needleforge.scenes.colour_cast import MEASURE_NAME, MEASURE_VERSION
from tests.backends.look_cases import back_to_back, real_frames

VIDEO = "v" + "cd" * 8
ORANGE = "mostly orange"


def _cast(scene_id: str, word: str = ORANGE) -> SceneTag:
    return SceneTag(scene_id, word, 0.79, MEASURE_NAME, MEASURE_VERSION)


def test_the_writer_asks_for_the_mostly_orange_scene() -> None:
    scene = back_to_back(VIDEO, 1, length_s=6.0)[0]
    written = EmbeddedDescriber().write(TargetView(scene, (_cast(scene.scene_id),), (), None),
                                        needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A mostly orange scene."


def _request(target_images: list, negative_images: list[list], *,
             word: str = ORANGE) -> VerifyRequest:
    scenes = back_to_back(VIDEO, 1 + len(negative_images), length_s=6.0)

    def keyframes(index: int, images: list) -> tuple[Keyframe, ...]:
        return tuple(Keyframe(scenes[index].start_s + 0.5 + 0.7 * k, image)
                     for k, image in enumerate(images))

    target = TargetView(scenes[0], (_cast(scenes[0].scene_id, word),), (), None,
                        keyframes(0, target_images))
    negatives = tuple(SceneView(scene, (), (), keyframes(i + 1, images))
                      for i, (scene, images) in enumerate(zip(scenes[1:], negative_images,
                                                              strict=True)))
    return VerifyRequest("scene", f"A {word} scene.", f"When is there a {word} scene?",
                         target, negatives)


def test_the_looking_verifier_measures_the_colour_again() -> None:
    lego, coin, city = (real_frames("lego", most=4), real_frames("coin", most=4),
                        real_frames("city", most=4))
    verifier = LookingVerifier()
    good = verifier.verify(_request(lego, [coin[:2], city[:2]]))
    assert good.passed, good.reason
    assert "measure-colour-cast" in good.reason
    cat = real_frames("clockcat", most=6)[-1:]
    on_the_bed = verifier.verify(_request(lego, [coin[:2], cat]))
    assert not on_the_bed.passed and "negative-colour-cast" in on_the_bed.reason
    wrong = verifier.verify(_request(coin, [city[:2]]))  # the tables' word, not the frames'
    assert not wrong.passed and "measure-colour-cast" in wrong.reason


def test_the_table_verifier_refuses_a_negative_tagged_with_the_same_cast() -> None:
    request = _request([], [[]])
    negative = request.negatives[0]
    tagged = SceneView(negative.scene, (_cast(negative.scene.scene_id),), (), ())
    verdict = verify_scene(VerifyRequest("scene", request.description, request.question,
                                         request.target, (tagged,)))
    assert not verdict.passed and ORANGE in verdict.reason


LIGHT_GREY = "mostly light-grey"


def test_the_pale_zebrafish_tank_against_the_race_film_and_the_beige_desk() -> None:
    """The archival program's tank shots, asked as "a mostly light-grey scene": the race film
    (grey but mid-dark) may be a negative, the coin's beige desk (light, near-neutral) not."""
    tank, race, coin = (real_frames("fish2", most=4), real_frames("race1906", most=4),
                        real_frames("coin", most=2))
    verifier = LookingVerifier()
    good = verifier.verify(_request(tank, [race[:2], race[2:]], word=LIGHT_GREY))
    assert good.passed, good.reason
    desk = verifier.verify(_request(tank, [race[:2], coin], word=LIGHT_GREY))
    assert not desk.passed and "negative-colour-cast" in desk.reason
    assert "median luma" in desk.reason


def test_two_shot_words_are_written_as_a_list() -> None:
    scene = back_to_back(VIDEO, 1, length_s=6.0)[0]
    tags = (_cast(scene.scene_id, LIGHT_GREY),
            SceneTag(scene.scene_id, "black-and-white", 1.0, "measure-palette", "1"))
    written = EmbeddedDescriber().write(TargetView(scene, tags, (), None), needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A black-and-white, mostly light-grey scene."


BLUE_TINT = "blue-tinted"


def test_the_diver_asked_as_a_blue_tinted_scene() -> None:
    """The outdoors program's underwater shots: the writer says "a blue-tinted scene", the
    verifier measures the tint again; the tree at a window and the campus may be negatives,
    the man in the car (a blue seat and window behind him) and the night city may not."""
    scene = back_to_back(VIDEO, 1, length_s=6.0)[0]
    written = EmbeddedDescriber().write(
        TargetView(scene, (_cast(scene.scene_id, BLUE_TINT),), (), None), needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A blue-tinted scene."
    diver, tree, lawn = (real_frames("diver", most=4), real_frames("tree", most=2),
                         real_frames("pedestrians", most=2))
    verifier = LookingVerifier()
    good = verifier.verify(_request(diver, [tree, lawn], word=BLUE_TINT))
    assert good.passed, good.reason
    assert "leaning blue-tinted" in good.reason
    for other in ("carphone", "city"):
        refused = verifier.verify(_request(diver, [tree, real_frames(other, most=2)],
                                           word=BLUE_TINT))
        assert not refused.passed and "negative-colour-cast" in refused.reason, other
    wrong = verifier.verify(_request(lawn, [tree], word=BLUE_TINT))
    assert not wrong.passed and "measure-colour-cast" in wrong.reason


def test_every_negative_that_shows_the_claim_is_named_for_a_new_plan() -> None:
    """The verifier names all the negatives it refused, not only the first, so the stage can
    plan the montage again without them (nemo.generate's MAX_REPLANS)."""
    diver, tree = real_frames("diver", most=3), real_frames("tree", most=2)
    request = _request(diver, [real_frames("carphone", most=2), tree,
                               real_frames("city", most=2)], word=BLUE_TINT)
    verdict = LookingVerifier().verify(request)
    car, _, city = (n.scene.scene_id for n in request.negatives)
    assert not verdict.passed and verdict.refused_negatives == (car, city)
    assert verdict.reason.endswith("(and 1 more negative refused)")
    assert LookingVerifier().verify(_request(diver, [tree], word=BLUE_TINT)).refused_negatives == ()
