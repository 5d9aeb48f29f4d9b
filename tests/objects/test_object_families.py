"""Evidence that agrees before it is written: the tagger's crops settle a detector word.

Cases from real footage: a biscuit box called "cake" (crops: chest, crate), a Lego model
called "cake" (crops: power drill), a cockatoo called "teddy bear", a van called "car" and
"truck".
"""

from __future__ import annotations

import pytest

from needleforge.backends.embedded.labels import COCO_LABELS, IMAGENET_COARSE
from needleforge.objects.families import (
    FAMILIES,
    VEHICLE,
    VEHICLE_KINDS,
    family_for,
    quorum,
    settle_label,
)
from needleforge.objects.fragments import LabelEvidence
from needleforge.params import ObjectParams
from needleforge.records import TagScore

GROUPS = ObjectParams().confusable_labels


def _said(*labels: tuple[str, int, float]) -> tuple[LabelEvidence, ...]:
    return tuple(LabelEvidence(label, n, score) for label, n, score in labels)


def _crop(**scores: float) -> list[TagScore]:
    """One crop's tags; keyword names use ``_`` for spaces (``moving_van=0.6``)."""
    return [TagScore(name.replace("_", " "), s) for name, s in scores.items()]


def _word(labels: tuple[LabelEvidence, ...], *crops: list[TagScore]) -> str | None:
    return settle_label(labels, crops, confusable_groups=GROUPS).word


CAKE = _said(("cake", 3, 2.2))


def test_a_detector_word_the_tagger_contradicts_is_not_written() -> None:
    biscuit_box = [_crop(chest=0.45, crate=0.2), _crop(crate=0.5, chest=0.3)]
    assert _word(CAKE, *biscuit_box) is None
    lego = [_crop(power_drill=0.85), _crop(power_drill=0.6, corkscrew=0.06)]
    verdict = settle_label(CAKE, lego)
    assert verdict.word is None and "'tool', not 'cake', on 2 of 2 crops" in verdict.reason


def test_where_the_tagger_is_silent_or_unsure_the_detector_word_stands() -> None:
    assert _word(CAKE) == "cake"  # no crop judged
    assert _word(CAKE, [], []) == "cake"  # the tagger answered nothing
    assert _word(CAKE, _crop(chest=0.2), _crop(crate=0.3)) == "cake"  # not confident
    assert _word(CAKE, _crop(chest=0.9), _crop(trifle=0.06)) == "cake"  # seen once: stands
    # One confident crop of three is no quorum.
    assert _word(CAKE, _crop(chest=0.9), _crop(wool=0.5), _crop(honeycomb=0.4)) == "cake"
    # Labels no family judges are never dropped, whatever the crops say.
    for label in ("person", "kite", "surfboard", "not a coco label"):
        assert _word(_said((label, 4, 3.0)), _crop(chest=0.9), _crop(chest=0.9)) == label


def test_a_group_word_is_support_never_a_claim() -> None:
    """A blurred 40-pixel crop of a parked van: the tagger spread 0.5-0.6 over dog breeds
    (its group word "dog"), no breed above 0.1. That is no dog, and the van stays."""
    van = [_crop(dog=0.61, Saint_Bernard=0.07), _crop(dog=0.25), _crop(dog=0.55)]
    assert _word(_said(("car", 12, 7.6)), *van) == "car"
    # ... while the group word still backs a label of its own family.
    assert _word(_said(("dog", 3, 2.0)), _crop(dog=0.3, chest=0.5), _crop(chest=0.6)) == "dog"


def test_a_contradicted_word_becomes_the_confusable_word_the_tagger_sees() -> None:
    cockatoo = [_crop(sulphur_crested_cockatoo=0.6, bird=0.7), _crop(bird=0.5, macaw=0.4)]
    assert _word(_said(("teddy bear", 4, 3.2)), *cockatoo) == "bird"
    # Not confusable with "car": the word is dropped, not turned into "bird".
    assert _word(_said(("car", 4, 3.2)), *cockatoo) is None


def test_the_tagger_decides_between_two_labels_on_one_box() -> None:
    both = _said(("teddy bear", 5, 4.0), ("bird", 3, 2.0))
    cockatoo = [_crop(sulphur_crested_cockatoo=0.6, bird=0.7), _crop(bird=0.2)]
    assert _word(both, *cockatoo) == "bird"
    assert _word(both, _crop(teddy_bear=0.8), _crop(teddy_bear=0.5)) == "teddy bear"
    assert _word(both) == "teddy bear"  # silent: the label with more evidence
    cat_dog = _said(("dog", 3, 2.4), ("cat", 2, 1.8))
    assert _word(cat_dog, _crop(tabby_cat=0.5, cat=0.6), _crop(cat=0.3)) == "cat"


CAR = _said(("car", 6, 4.8))
TRUCK = _said(("truck", 6, 4.8))


def test_vehicles_get_the_finer_kind_the_tagger_confirms() -> None:
    assert _word(CAR, _crop(minivan=0.5, car=0.6), _crop(minivan=0.4)) == "van"
    assert _word(TRUCK, _crop(moving_van=0.7), _crop(moving_van=0.6, trailer_truck=0.1)) \
        == "van"
    assert _word(TRUCK, _crop(pickup_truck=0.6), _crop(pickup_truck=0.5)) == "pickup truck"
    assert _word(CAR, _crop(sports_car=0.6), _crop(sports_car=0.3)) == "sports car"
    assert _word(CAR, _crop(racer=0.6), _crop(racer=0.7)) == "race car"
    assert _word(CAR, _crop(cab=0.6), _crop(cab=0.3)) == "car"
    # Weak or split votes confirm nothing: the word stands.
    assert _word(CAR, _crop(minivan=0.1), _crop(minivan=0.15)) == "car"
    assert _word(CAR, _crop(minivan=0.5), _crop(grille=0.5), _crop(car_wheel=0.4)) == "car"
    assert _word(CAR, _crop(minivan=0.5), _crop(grille=0.5)) == "van"  # 1 of 2 is a quorum


def test_a_vehicle_whose_kind_is_open_is_a_vehicle() -> None:
    van = _said(("truck", 18, 12.0), ("car", 4, 2.4))  # switched labels: car, then truck
    assert _word(van) == VEHICLE
    assert _word(van, _crop(moving_van=0.6), _crop(minivan=0.5)) == "van"
    assert _word(van, _crop(trailer_truck=0.6), _crop(tow_truck=0.5)) == "truck"
    stray = _said(("car", 10, 8.0), ("truck", 1, 0.6))  # one stray frame is no switch
    assert _word(stray) == "car"
    thin = _said(("car", 30, 27.0), ("truck", 2, 1.0))  # < 10 % of the evidence
    assert _word(thin) == "car"
    # The tagger confirms a kind the detector never said.
    assert _word(TRUCK, _crop(cab=0.6), _crop(jeep=0.5)) == VEHICLE
    # The crops vote for kinds of car and of truck.
    assert _word(CAR, _crop(cab=0.6), _crop(pickup_truck=0.5)) == VEHICLE
    assert _word(_said(("bus", 3, 2.0)), _crop(school_bus=0.8), _crop(minibus=0.4)) == "bus"


def test_bad_input_and_helpers() -> None:
    with pytest.raises(ValueError, match="at least one detector label"):
        settle_label((), [])
    with pytest.raises(ValueError, match="keyframes = 0"):
        LabelEvidence("car", 0, 1.0)
    assert [quorum(n) for n in (1, 2, 3, 4, 9)] == [1, 1, 2, 2, 2]
    assert family_for(" Teddy  Bear ") is not None and family_for("person") is None
    # Tags are matched however the tagger spells them.
    assert _word(_said(("Teddy Bear", 2, 1.5)), [TagScore("  Sulphur-Crested  Cockatoo ", 0.8)],
                 [TagScore("MACAW", 0.6)]) == "bird"


def test_the_tables_are_consistent() -> None:
    seen: dict[str, str] = {}
    for family in FAMILIES:
        for name in family.classes | family.groups:
            assert name not in seen, f"{name!r} is in {seen.get(name)} and {family.word}"
            seen[name] = family.word
            assert name == " ".join(name.lower().split())
    coco = set(COCO_LABELS.values())
    assert {lb for f in FAMILIES for lb in f.labels} <= coco
    vehicle = family_for("car")
    assert vehicle is not None
    assert set().union(*VEHICLE_KINDS.values()) <= vehicle.classes
    groups = {g for f in FAMILIES for g in f.groups}
    assert groups <= set(IMAGENET_COARSE)  # group words are the tagger's coarse words
    assert not groups & {c for f in FAMILIES for c in f.classes}


def test_every_class_is_a_tag_the_embedded_tagger_gives() -> None:
    from needleforge.backends.embedded.labels import readable_imagenet_label
    from needleforge.backends.embedded.model_files import (
        OPENPIBO_DISTRIBUTION,
        OPENPIBO_PACKAGE,
        resolve_models_dir,
    )
    from needleforge.errors import BackendError

    try:
        folder = resolve_models_dir(None, package=OPENPIBO_PACKAGE,
                                    distribution=OPENPIBO_DISTRIBUTION)
    except BackendError:
        pytest.skip("the embedded model package is not installed")
    lines = (folder / "efficientnet_labels.txt").read_text(encoding="utf-8").splitlines()
    tags = {" ".join(readable_imagenet_label(ln).lower().split()) for ln in lines if ln.strip()}
    missing = sorted(name for f in FAMILIES for name in f.classes if name not in tags)
    assert not missing
