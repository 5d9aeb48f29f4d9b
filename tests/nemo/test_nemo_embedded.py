"""The embedded describer's phrasing and the embedded verifier's decisions and reasons."""

from __future__ import annotations

import re

import pytest
from nemo_cases import make_scene, make_tag, make_track

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.backends.writer_prompts import OBJECT_TEMPLATES, SCENE_TEMPLATES, choose_template
from needleforge.backends.writing import SceneView, Skip, TargetView, VerifyRequest, WrittenNeedle
from needleforge.objects import referring_expressions
from needleforge.records import NeedleType, ObjectTrack, Scene
from needleforge.records.phrases import COLOUR_NAMES, PERSON_WORDS, named_colours

CAT_SCENE = make_scene(0, 0.0, 9.0, subtitle="The secret word is marmalade, said the cat.")
WHITE_CAT = make_track(CAT_SCENE, 0, "cat", colour="white", position="left",
                       expression="the white cat on the left")
CUPS = [make_track(CAT_SCENE, i, "cup", colour="red", area=0.06) for i in (1, 2)]
CAT_TAGS = (make_tag(CAT_SCENE, "cat", 0.9), make_tag(CAT_SCENE, "brick wall", 0.8),
            make_tag(CAT_SCENE, "street", 0.7), make_tag(CAT_SCENE, "sky", 0.6))


def _view(target: ObjectTrack | None = WHITE_CAT) -> TargetView:
    return TargetView(CAT_SCENE, CAT_TAGS, (WHITE_CAT, *CUPS), target)


def _negative(index: int, *labels: str, tags: tuple[str, ...] = (), colour: str = "white",
              position: str = "left") -> SceneView:
    scene = make_scene(index, 10.0 * index, 10.0 * index + 6.0)
    objects = tuple(make_track(scene, i, label, colour=colour, position=position)
                    for i, label in enumerate(labels))
    return SceneView(scene, tuple(make_tag(scene, t) for t in tags), objects)


def _written(needle_type: NeedleType = "object", target: ObjectTrack | None = WHITE_CAT
             ) -> WrittenNeedle:
    written = EmbeddedDescriber(seed=0, fine_tags=True).write(_view(target),
                                                              needle_type=needle_type)
    assert isinstance(written, WrittenNeedle)
    return written


def _verify(description: str, negatives: list[SceneView], *, question: str | None = None,
            target: ObjectTrack | None = WHITE_CAT) -> tuple[bool, str]:
    needle_type: NeedleType = "object" if target is not None else "scene"
    request = VerifyRequest(needle_type, description,
                            question or f"When does {description} appear?",
                            _view(target), tuple(negatives))
    verdict = EmbeddedVerifier().verify(request)
    return verdict.passed, verdict.reason


def test_object_needle_uses_the_referring_expression_and_a_recorded_template() -> None:
    written = _written()
    template_id, text = choose_template("object", key=WHITE_CAT.object_id, seed=0)
    assert written.description == "the white cat on the left"
    assert (written.template_id, written.question) == (
        template_id, text.format(obj="the white cat on the left"))
    chosen = {choose_template("object", key=f"o{i}", seed=0)[0] for i in range(200)}
    assert chosen == {tid for tid, _ in OBJECT_TEMPLATES}
    assert {choose_template("scene", key=f"s{i}", seed=0)[0] for i in range(200)} == {
        tid for tid, _ in SCENE_TEMPLATES}


def test_abstract_or_index_only_objects_are_skipped() -> None:
    sky = make_track(CAT_SCENE, 3, "Sky")
    result = EmbeddedDescriber().write(
        TargetView(CAT_SCENE, CAT_TAGS, (sky,), sky), needle_type="object")
    assert isinstance(result, Skip) and "'sky' is too abstract" in result.reason
    indexed = make_track(CAT_SCENE, 4, "cat", expression="the white cat (object 5)")
    result = EmbeddedDescriber().write(
        TargetView(CAT_SCENE, CAT_TAGS, (indexed,), indexed), needle_type="object")
    assert isinstance(result, Skip) and "cannot tell it apart" in result.reason
    alike = make_track(CAT_SCENE, 4, "cat",
                       expression="the white cat on the left (one of two alike)")
    result = EmbeddedDescriber().write(
        TargetView(CAT_SCENE, CAT_TAGS, (alike,), alike), needle_type="object")
    assert isinstance(result, Skip) and "look-alikes" in result.reason
    with pytest.raises(ValueError, match="does not fit"):
        EmbeddedDescriber().write(_view(), needle_type="scene")


def test_scene_description_names_objects_and_top_tags_never_subtitles() -> None:
    written = _written("scene", None)
    # Scene words are tags that are not the objects' labels: up to scene_top_tags of them.
    assert written.description == ("A scene with a cat and two cups, in a setting "
                                   "tagged brick wall, street and sky.")
    # By default only words a detector can check are named: no "brick wall".
    default = EmbeddedDescriber().write(_view(None), needle_type="scene")
    assert isinstance(default, WrittenNeedle)
    assert default.description == "A scene with a cat and two cups."
    tagged_tie = EmbeddedDescriber().write(
        TargetView(CAT_SCENE, (make_tag(CAT_SCENE, "windsor tie"), make_tag(CAT_SCENE, "tie"),
                              make_tag(CAT_SCENE, "beaker")), (), None), needle_type="scene")
    assert isinstance(tagged_tie, WrittenNeedle)
    assert tagged_tie.description == "A scene tagged tie."
    assert "a scene with a cat and two cups" in written.question
    assert "marmalade" not in written.description + written.question
    bare = make_scene(5, 0.0, 9.0)
    tags_only = EmbeddedDescriber(fine_tags=True).write(
        TargetView(bare, (make_tag(bare, "kitchen"), make_tag(bare, "table")), (), None),
        needle_type="scene")
    assert isinstance(tags_only, WrittenNeedle)
    assert tags_only.description == "A scene tagged kitchen and table."
    nothing = EmbeddedDescriber().write(TargetView(bare, (), (), None), needle_type="scene")
    assert isinstance(nothing, Skip) and "nothing to describe" in nothing.reason


def test_verifier_rejects_a_same_colour_cat_and_accepts_a_unique_one() -> None:
    ambiguous = _negative(7, "cat", colour="white", position="left")
    passed, reason = _verify("the white cat", [_negative(3, "dog"), ambiguous])
    assert not passed
    assert reason == (f"ambiguous: negative {ambiguous.scene.scene_id} also shows a white cat "
                      f"on the left ({ambiguous.objects[0].object_id})")
    grey = _negative(8, "cat", colour="grey")
    passed, reason = _verify("the white cat", [_negative(3, "dog"), grey])
    assert passed and reason == "unique: 1 of 2 negatives hold a 'cat', none white"
    passed, reason = _verify("the white cat on the left", [_negative(3, "dog")])
    assert passed and reason == "unique: 0 of 1 negatives hold a 'cat'"
    # the bare label fits any cat: ambiguous even when the colour differs
    passed, reason = _verify("the cat", [grey])
    assert not passed and "also shows a grey cat" in reason


@pytest.mark.parametrize("expression", [
    "the first of the two white cats on the left",
    "the larger white cat",
    "the white cat at the top left",
])
def test_every_referring_expression_form_is_checkable(expression: str) -> None:
    position = "top left" if "top left" in expression else "left"
    cat = make_track(CAT_SCENE, 0, "cat", colour="white", position=position,
                     expression=expression)
    view = TargetView(CAT_SCENE, CAT_TAGS, (cat, *CUPS), cat)
    written = EmbeddedDescriber().write(view, needle_type="object")
    assert isinstance(written, WrittenNeedle) and written.description == expression
    request = VerifyRequest("object", written.description, written.question, view,
                            (_negative(3, "cat", colour="black"),))
    verdict = EmbeddedVerifier().verify(request)
    assert verdict.passed, verdict.reason
    assert verdict.reason.startswith("unique: 1 of 1 negatives hold a 'cat', none white")


@pytest.mark.parametrize(("description", "negatives", "reason"), [
    ("the white cat", [_negative(4, tags=("cat", "sofa"))],
     "is tagged with 'cat' and has no tracked object to compare"),
    ("the black cat", [_negative(3, "dog")], "the target cat has colour 'white', not 'black'"),
    ("the cat on the right", [_negative(3, "dog")], "has position 'left', not 'right'"),
    ("the white animal", [_negative(3, "dog")], "does not name the target's label 'cat'"),
    ("the white cat next to a dog", [_negative(3, "dog")],
     "names 'dog', which the target scene does not show"),
    ("the white cat", [], "no negatives in the montage"),
    ("the cat of the secret word marmalade", [_negative(3, "dog")],
     "repeats subtitle text 'the secret word'"),
])
def test_object_verdicts_fail_with_a_specific_reason(
    description: str, negatives: list[SceneView], reason: str
) -> None:
    passed, got = _verify(description, negatives)
    assert not passed and reason in got


def test_question_must_carry_the_description() -> None:
    passed, reason = _verify("the white cat", [_negative(3, "dog")],
                             question="When does the black cat appear?")
    assert not passed and "does not name 'cat' with the description's colours" in reason


def _scene_verify(description: str, negatives: list[SceneView],
                  question: str | None = None) -> tuple[bool, str]:
    return _verify(description, negatives, target=None,
                   question=question or f"When in the video is there {description.lower()}?")


def test_scene_verdicts() -> None:
    description = _written("scene", None).description
    road = _negative(3, tags=("road", "car"))
    passed, reason = _scene_verify(description, [road, _negative(4, "dog")])
    assert passed
    assert reason == ("unique: none of 2 negatives holds any of 'brick wall', 'cat', 'cup', "
                      "'sky', 'street'")
    # One thing the question names is enough: a viewer could point at that street.
    street_only = _negative(5, tags=("street",))
    passed, reason = _scene_verify(description, [road, street_only])
    assert not passed and reason == (
        f"ambiguous: negative {street_only.scene.scene_id} also holds 'street'")


@pytest.mark.parametrize(("description", "question", "reason"), [
    ("A lovely moment.", None, "no checkable evidence"),
    ("A scene with a cat and a dog.", None, "the target scene does not hold 'dog'"),
    ("A scene with a cat on a street.", "When is there a cat?",
     "question names 'cat' but the description names 'cat', 'street'"),
])
def test_scene_verdicts_fail_without_evidence(
    description: str, question: str | None, reason: str
) -> None:
    passed, got = _scene_verify(description, [_negative(4, "dog")], question)
    assert not passed and reason in got


def test_views_refuse_records_of_other_scenes() -> None:
    other: Scene = make_scene(9, 90.0, 99.0)
    with pytest.raises(ValueError, match="holds tags/objects of"):
        TargetView(CAT_SCENE, (make_tag(other, "x"),), (), None)
    with pytest.raises(ValueError, match="is not among the objects"):
        TargetView(CAT_SCENE, (), (), WHITE_CAT)


#: A colour word right before a word for people ("a black person"): never written.
_COLOUR_BEFORE_PERSON = re.compile(
    r"\b(?:" + "|".join(COLOUR_NAMES) + r")\s+(?:" + "|".join(sorted(PERSON_WORDS)) + r")\b",
    re.IGNORECASE)


@pytest.mark.parametrize("label", ["person", *sorted(PERSON_WORDS)])
def test_people_are_never_described_by_a_colour_word_before_them(label: str) -> None:
    """Every colour x every person label, through scene descriptions and object needles."""
    scene = make_scene(6, 0.0, 9.0)
    for colour in COLOUR_NAMES:
        one = make_track(scene, 0, label, colour=colour, expression=f"the {label}")
        built = referring_expressions([one, make_track(scene, 1, label, colour="grey"
                                                       if colour != "grey" else "red")])
        for phrase in built:
            assert not _COLOUR_BEFORE_PERSON.search(phrase), phrase
        written = EmbeddedDescriber().write(TargetView(scene, (), (one,), None),
                                            needle_type="scene")
        assert isinstance(written, WrittenNeedle)
        text = f"{written.description} {written.question}"
        assert not _COLOUR_BEFORE_PERSON.search(text), text
        # Scene descriptions name no colours at all (their verifiers check what a scene
        # holds, not colours); people's clothes are named in object needles.
        assert not named_colours(written.description), written.description


def test_objects_too_small_to_count_are_named_without_a_number() -> None:
    """Books on a shelf: the detector boxed two of forty, each under 1 % of the frame, so
    "two books" is a count nobody can check; "books" is true. Two people at a lectern,
    a fifth of the frame each, are counted."""
    scene = make_scene(6, 0.0, 9.0)
    books = tuple(make_track(scene, i, "book", area=0.006) for i in range(2))
    people = tuple(make_track(scene, 2 + i, "person", area=0.2) for i in range(2))
    written = EmbeddedDescriber().write(TargetView(scene, (), (*books, *people), None),
                                        needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A scene with two people and books."


def test_counts_stay_small_and_flickering_tracks_are_not_named() -> None:
    scene = make_scene(6, 0.0, 9.0)
    cars = tuple(make_track(scene, i, "car") for i in range(5))
    written = EmbeddedDescriber().write(TargetView(scene, (), cars, None), needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A scene with several cars."
    three = EmbeddedDescriber().write(TargetView(scene, (), cars[:3], None),
                                      needle_type="scene")
    assert isinstance(three, WrittenNeedle) and three.description == "A scene with three cars."
    # Seen on alternate keyframes only (never two in a row): visible_s 0, no evidence.
    flicker = make_track(scene, 7, "dog", visible=0.0)
    skipped = EmbeddedDescriber().write(TargetView(scene, (), (flicker,), None),
                                        needle_type="scene")
    assert isinstance(skipped, Skip) and "nothing to describe" in skipped.reason


def test_terms_common_in_the_video_are_left_out_of_scene_descriptions() -> None:
    scene = make_scene(6, 0.0, 9.0)
    person = make_track(scene, 0, "person", colour="black")
    cup = make_track(scene, 1, "cup", colour="red")
    tags = (make_tag(scene, "desk", 0.5), make_tag(scene, "person", 0.9))
    view = TargetView(scene, tags, (person, cup), None, common_terms=frozenset({"person"}))
    written = EmbeddedDescriber(fine_tags=True).write(view, needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A scene with a cup, in a setting tagged desk."
    only_common = TargetView(scene, tags[1:], (person,), None,
                             common_terms=frozenset({"person"}))
    skipped = EmbeddedDescriber().write(only_common, needle_type="scene")
    assert isinstance(skipped, Skip) and "common in its video: ['person']" in skipped.reason
