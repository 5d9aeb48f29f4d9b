"""People told apart by their clothes: "the person in black" against the negatives' people.

The rule (:mod:`needleforge.records.attire`) is applied in three places that must agree: the
negatives drawn from the tables, the probe that looks again, and the verifiers. Negatives are
tested on the hand-built tables; the probe on painted frames whose clothing colour is measured
for real (:func:`~needleforge.objects.attributes.clothing_colour`) with a detector that boxes
the painted person where it stands, and on a real street frame whose only person is a pair of
legs the pose model sees.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from nemo_cases import make_tag, make_track, params, tile
from test_nemo_probe import _bikes_frame, _Frames

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.writer import EmbeddedDescriber, verify_object
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.nemo import TiledProbe, index_tables, select_negatives
from needleforge.nemo.targets import Target
from needleforge.objects.attributes import clothing_colour
from needleforge.records import Box, Detection
from needleforge.records.attire import (
    NEAR_COLOURS,
    could_be,
    described_attire,
    sighting_label,
    split_sighting_label,
)

# --- the rule ---------------------------------------------------------------------------------


def test_near_colours_are_symmetric_and_hold_themselves() -> None:
    for colour, near in NEAR_COLOURS.items():
        assert colour in near
        assert all(colour in NEAR_COLOURS[other] for other in near)
    assert could_be("black", "blue") and could_be("black", "grey")
    assert not could_be("black", "red") and not could_be("white", "black")
    assert could_be("red", "")  # unknown clothes could be anything


def test_a_described_colour_must_be_a_colour_name() -> None:
    with pytest.raises(ValueError, match="'navy' is not one of"):
        could_be("navy", "blue")


@pytest.mark.parametrize(("text", "want"), [
    ("the person in black on the left", {"person": "black"}),
    ("Where is the person in white?\nthe person in white", {"person": "white"}),
    ("the person", {}),                                 # no clothes named: not qualified
    ("the person in black and the person", {}),         # one mention unqualified
    ("the person in black and the person in red", {}),  # two people, two colours
    ("the white cat", {}),                              # only people are qualified
    ("the person in the centre", {}),                   # a place, not clothes
])
def test_described_attire_reads_people_by_their_clothes(text: str,
                                                        want: dict[str, str]) -> None:
    assert described_attire(text, ["person", "cat"]) == want


def test_sighting_labels_round_trip() -> None:
    assert sighting_label(" Person ", "black") == "person~black"
    assert split_sighting_label("person~black") == ("person", "black")
    assert split_sighting_label("person~") == ("person", "")
    assert split_sighting_label("person") is None


# --- negatives from the tables ----------------------------------------------------------------


def test_a_negative_with_people_in_other_clothes_may_serve() -> None:
    """s0 holds the person in black; s1 a person in red (may serve), s2 one in navy (near
    black: out), s3 one whose clothes were not measured (out), s4 a 'person' tag no track
    backs (out), s5 nobody (may serve)."""
    s = tile([8.0, 6.0, 6.0, 6.0, 6.0, 6.0])
    tracks = [make_track(s[0], 0, "person", colour="black"),
              make_track(s[1], 0, "person", colour="red"),
              make_track(s[2], 0, "person", colour="blue"),
              make_track(s[3], 0, "person", colour="")]
    tags = [make_tag(s[4], "person"), make_tag(s[5], "street")]
    tables = index_tables(s, tags=tags, objects=tracks)
    target = Target("object", s[0], tracks[0])
    excluded = frozenset({"person"})

    def drawn(attire: dict[str, str] | None) -> list[str]:
        return sorted(n.scene_id for n in select_negatives(
            target, tables, params=params(), rng=random.Random(0), excluded=excluded,
            attire=attire))

    assert drawn({"person": "black"}) == [s[1].scene_id, s[5].scene_id]
    assert drawn(None) == [s[5].scene_id]  # "the person": nobody else may be in view


# --- the probe --------------------------------------------------------------------------------


def _painted(shirt: tuple[int, int, int]) -> RGBImage:
    """A grey 320x240 frame with a standing figure: a skin-toned head over a ``shirt``
    torso and dark trousers, inside the box :data:`_FIGURE`."""
    frame = np.full((240, 320, 3), 128, dtype=np.uint8)
    frame[40:80, 140:180] = (200, 150, 120)  # head
    frame[80:150, 120:200] = shirt           # torso
    frame[150:220, 130:190] = (40, 40, 40)   # legs
    return frame


_FIGURE = Box(120 / 320, 40 / 240, 80 / 320, 180 / 240)


class _Boxer:
    """Boxes the painted figure as a person on every frame that has one (its torso is not
    the backdrop grey); the probe's logic is under test here, not the SSD."""

    name, version = "boxer", "1"

    def detect(self, image: RGBImage, *, t_s: float) -> Sequence[Detection]:
        if (image[100, 160] == 128).all():
            return []
        return [Detection(t_s=t_s, label="person", score=0.9, box=_FIGURE)]


class _Nobody:
    """Boxes nothing: the person is seen by the pose model alone."""

    name, version = "nobody", "1"

    def detect(self, image: RGBImage, *, t_s: float) -> Sequence[Detection]:
        return []


def test_painted_shirts_are_measured_as_clothes() -> None:
    assert clothing_colour(_painted((200, 30, 30)), _FIGURE) == "red"
    assert clothing_colour(_painted((20, 20, 20)), _FIGURE) == "black"


def test_the_probe_refuses_only_people_who_could_be_the_one_described() -> None:
    s = tile([8.0, 6.0, 6.0, 6.0])
    red, black, empty = _painted((200, 30, 30)), _painted((20, 20, 20)), _painted((128,) * 3)
    frames = _Frames({1: red, 2: black, 3: empty})
    probe = TiledProbe(_Boxer(), frames, cols=1, rows=1, overlap=0.0, min_score=0.5,
                       attire=clothing_colour)
    assert probe.key.endswith(" attire")
    target = Target("object", s[0], make_track(s[0], 0, "person", colour="black"))
    dressed = {"person": "black"}
    assert probe.evidence(s[1], target, attire=dressed) is None      # a person in red
    refusal = probe.evidence(s[2], target, attire=dressed)           # a person in black
    assert refusal is not None and refusal.sighting.label == "person~black"
    assert probe.evidence(s[3], target, attire=dressed) is None      # nobody
    # Without the description's clothes, any person refuses, as before.
    assert probe.evidence(s[1], target) is not None
    labels = {g.label for g in probe.scan(s[1]).sightings}
    assert labels == {"person", "person~red"}
    # A probe that does not measure clothes refuses every person, whatever is described.
    plain = TiledProbe(_Boxer(), frames, cols=1, rows=1, overlap=0.0, min_score=0.5)
    assert "attire" not in plain.key
    assert plain.evidence(s[1], target, attire=dressed) is not None


def test_a_pose_nobody_boxed_is_a_person_in_unknown_clothes() -> None:
    """bikes.mp4 at 7.72 s: a passer-by's legs, which the pose model sees and no detector
    boxes: the clothes are unknown, so "the person in red" may not take that scene."""
    from needleforge.backends.embedded.pose import EmbeddedPose

    s = tile([8.0, 6.0])
    frames = _Frames({1: _bikes_frame(7.72)})
    probe = TiledProbe(_Nobody(), frames, cols=1, rows=1, overlap=0.0, min_score=0.5,
                       pose=EmbeddedPose().keypoint_scores, attire=clothing_colour)
    target = Target("object", s[0], make_track(s[0], 0, "person", colour="red"))
    refusal = probe.evidence(s[1], target, attire={"person": "red"})
    assert refusal is not None and refusal.sighting.label == "person~"


# --- the writer and the table verifier --------------------------------------------------------


def test_the_writer_names_what_a_person_wears() -> None:
    s = tile([8.0])
    person = make_track(s[0], 0, "person", colour="black", expression="the person on the left")
    plain = make_track(s[0], 1, "person", colour="", expression="the person")
    cat = make_track(s[0], 2, "cat", colour="white", expression="the cat")
    writer = EmbeddedDescriber()

    def described(track: object) -> str:
        view = TargetView(s[0], (), (person, plain, cat), track, ())  # type: ignore[arg-type]
        written = writer.write(view, needle_type="object")
        assert isinstance(written, WrittenNeedle)
        return written.description

    assert described(person) == "the person in black on the left"
    assert described(plain) == "the person"  # clothes not measured: nothing invented
    assert described(cat) == "the cat"       # only people are told by their clothes


def test_the_table_verifier_takes_near_clothes_for_the_same() -> None:
    s = tile([8.0, 6.0, 6.0])
    target_track = make_track(s[0], 0, "person", colour="black")
    target = TargetView(s[0], (), (target_track,), target_track, ())

    def verdict(colour: str) -> bool:
        other = make_track(s[1], 0, "person", colour=colour)
        negatives = (SceneView(s[1], (), (other,), ()), SceneView(s[2], (), (), ()))
        return verify_object(VerifyRequest("object", "the person in black",
                                           "When does the person in black appear?", target,
                                           negatives)).passed

    assert verdict("red")
    assert not verdict("blue")   # navy could be what "black" means
    assert not verdict("")       # unmeasured clothes could be anything
