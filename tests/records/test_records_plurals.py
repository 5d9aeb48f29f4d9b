"""Plurals of every tag the project knows are inflect's, and text using them names the tag.

The vocabularies: the detector's 80 COCO labels (and the COCO words ImageNet classes are grouped
under), the embedded classifier's 1,000 ImageNet classes under the readable names the tagger
gives them, and RAM++'s 4,585-word tag list, which ships with the ``ram`` package only (in its
own environment, ``make ram-env``): its case runs where that list is found.

The reference plurals come from inflect imported plainly in a child process, with its typeguard
instrumentation, so :func:`~needleforge.records.phrases.plural` importing it without the
instrumentation is checked too.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from needleforge.backends.embedded.labels import (
    COCO_LABELS,
    IMAGENET_COARSE,
    readable_imagenet_label,
)
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    package_models_dir,
)
from needleforge.backends.embedded.tagger import LABELS_FILE
from needleforge.records.phrases import named_terms, normalize, plural

ROOT = Path(__file__).resolve().parents[2]

#: The rule on top of inflect: a tag that is already plural is its own plural. inflect, asked
#: for the plural of a plural, adds a second ending ("jeans" → "jeanss"); these are the tags of
#: each vocabulary where it does, all kept as they are. A few are singular words ending in -s
#: that inflect takes for plurals (tennis, thermos, patas); keeping them is harmless (tennis
#: has no plural) or a rare miss ("two thermos").
KEPT_AS_PLURAL: dict[str, frozenset[str]] = {
    "coco": frozenset({"skis"}),
    "imagenet": frozenset({
        "Bouvier des Flandres", "Great Pyrenees", "binoculars", "parallel bars", "patas",
        "sunglasses", "swimming trunks", "triceratops"}),
    "ram++": frozenset({
        "3D glasses", "French fries", "aerobics", "aviator sunglasses", "badlands",
        "baked goods", "bangs", "christmas", "clogs", "dishes", "glasses", "goggles", "grits",
        "jeans", "oats", "pants", "play tennis", "power plugs and sockets", "roller skates",
        "ruins", "salt and pepper shakers", "shorts", "skiing shoes", "stairs", "sunglasses",
        "suspenders", "table tennis", "tennis", "thermos", "tights", "tongs", "underclothes",
        "underdrawers"}),
}


def _ram_tag_list() -> Path | None:
    """RAM++'s tag list where a ``ram`` package is installed here or in ``.venv-ram``."""
    places = sorted(ROOT.glob(".venv-ram/lib/python*/site-packages/ram"))
    spec = importlib.util.find_spec("ram")
    if spec is not None and spec.submodule_search_locations:
        places += [Path(p) for p in spec.submodule_search_locations]
    lists = [p / "data" / "ram_tag_list.txt" for p in places]
    return next((p for p in lists if p.is_file()), None)


def _vocabulary(name: str) -> list[str]:
    """The tags of vocabulary ``name``; skips the test when RAM++'s list is not installed."""
    if name == "coco":
        return sorted({*COCO_LABELS.values(), *IMAGENET_COARSE})
    if name == "imagenet":
        path = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
        lines = (path / LABELS_FILE).read_text(encoding="utf-8").splitlines()
        return sorted({readable_imagenet_label(line) for line in lines if line.strip()})
    path = _ram_tag_list()
    if path is None:
        pytest.skip("RAM++'s tag list ships with the `ram` package only (make ram-env)")
    return _ram_tags(path)


def _ram_tags(path: Path) -> list[str]:
    return sorted({line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                   if line.strip()})


@pytest.fixture(scope="module")
def inflected() -> dict[str, str]:
    """inflect's plurals of every known tag, from a child process importing it the usual way.

    One child for all vocabularies: importing inflect with its instrumentation costs ~1.3 s.
    """
    ram = _ram_tag_list()
    words = [*_vocabulary("coco"), *_vocabulary("imagenet"), *(_ram_tags(ram) if ram else [])]
    script = ("import inflect, json, sys; p = inflect.engine(); "
              "print(json.dumps({w: p.plural_noun(w) for w in json.load(sys.stdin)}))")
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(words),
                          capture_output=True, text=True, check=True, timeout=120)
    result: dict[str, str] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("name", ["coco", "imagenet", "ram++"])
def test_plural_of_every_known_tag_is_inflects(name: str, inflected: dict[str, str]) -> None:
    tags = _vocabulary(name)
    assert len(tags) >= 80
    kept = {tag for tag in tags if plural(tag) != inflected[tag]}
    assert kept == KEPT_AS_PLURAL[name]
    for tag in kept:
        assert plural(tag) == tag
        assert inflected[tag] in (tag + "s", tag + "es")  # inflect's plural of a plural


@pytest.mark.parametrize("name", ["coco", "imagenet", "ram++"])
def test_a_description_using_the_plural_names_the_tag(name: str) -> None:
    for tag in _vocabulary(name):
        if len(normalize(tag)) < 2:
            continue  # one-letter terms are never matched
        text = f"In this scene: two {plural(tag)}, then one more."
        assert named_terms(text, [tag]) == {normalize(tag)}, (tag, plural(tag))


@pytest.mark.parametrize(
    ("tag", "text"),
    [("tomato", "a bowl of tomatoes"), ("loaf", "three loaves on a shelf"),
     ("knife", "two knives"), ("mouse", "mice run"), ("person", "people walk by"),
     ("cactus", "cactuses in pots"), ("goldfish", "the goldfish swim"),
     ("jeans", "folded jeans"), ("skis", "a pair of skis"), ("sheep", "the sheep graze")],
)
def test_irregular_plurals_name_their_tag(tag: str, text: str) -> None:
    assert named_terms(text, [tag]) == {tag}


def test_old_hand_written_plurals_are_gone() -> None:
    assert [plural(w) for w in ("tomato", "loaf", "goldfish", "jeans", "cell phone")] == [
        "tomatoes", "loaves", "goldfish", "jeans", "cell phones"]
    assert named_terms("two tomatos", ["tomato"]) == frozenset()  # a misspelling is not a name


@pytest.mark.parametrize("label", ["", "   ", "\t\n"])
def test_empty_label_has_no_plural(label: str) -> None:
    with pytest.raises(ValueError, match=r"plural: label = .* is empty"):
        plural(label)


def test_typeguard_is_left_as_it_was() -> None:
    import typeguard
    from typeguard import _decorators

    plural("zebra")
    assert typeguard.typechecked is _decorators.typechecked
