"""Which tagger classes back a detector word, and what to write when they do not.

The COCO detector names what it boxes from 80 words, and real footage shows it guessing: a
biscuit box called "cake" while the ImageNet tagger, shown the box's crop, answered "chest"
and "crate"; a cockatoo called "teddy bear"; a van called "car" for three seconds and "truck"
for twenty. A question written from such a word ("the cake") is a wrong question. This module
holds the tables and the decision; :mod:`.settle` cuts the crops and asks the tagger.

**Families** (:data:`FAMILIES`) name, for a few detector labels, the tagger classes (readable
ImageNet names as :class:`~needleforge.backends.embedded.tagger.EmbeddedTagger` gives them,
lower-cased, with its coarse group words such as ``"bird"``) that a crop of such a thing is
called by, generously: a cake's family is food and tableware (a crop of a cake says "trifle"
or "plate"), a vehicle's includes its grille and wheel. Families without detector labels
("box", "tool") only speak *against* a word. A label in no family is never judged.

**Per crop** (a keyframe's crop of the track's box): a family is *seen* when one of its
classes or group words scores >= :data:`SUPPORT_MIN` (anywhere in the tagger's answer), and
*claimed* when one of its classes — a single ImageNet class, never a group word — scores
>= :data:`CONFIDENT_MIN`. A group word is the tagger's sum over many classes ("dog" over 118
breeds): on a blurred 40-pixel crop of a parked van the tagger spread 0.5-0.6 over dog breeds
with no breed above 0.1, which sees nothing, let alone a dog. Crops the tagger answers nothing
for are not judged.

**The decision** (:func:`settle_label`), conservative on purpose: where the tagger is silent
the detector word stands.

1. The track's labels (most detector evidence first; several when fragments under different
   labels were merged) that have a family: the one whose family is seen on the most crops wins
   (ties: the detector's order). The tagger decides between "bird" and "teddy bear".
2. When none is seen on any crop, the detector word is contradicted if another family is
   claimed on a quorum of judged crops (2, or half of them when fewer than 4 were judged, as
   in the verifier's crop check): the track is relabelled to that family's one detector label
   when that label is one of the track's own or confusable with it (a "teddy bear" whose crops
   say cockatoo becomes "bird"); otherwise it is dropped (a "cake" whose crops say chest).
3. A car, truck or bus gets the finer word the crops confirm (:data:`VEHICLE_KINDS`: a kind
   is voted by a crop whose best vehicle class is of that kind and scores >= :data:`KIND_MIN`,
   and confirmed by a quorum of judged crops and more votes than any other kind): "van",
   "pickup truck", "sports car", "race car". When car and truck are both plausible — the
   track switched labels (the runner-up has >= :data:`SWITCH_MIN_KEYFRAMES` keyframes and
   >= :data:`SWITCH_MIN_SHARE` of the evidence), the crops vote for kinds of two of car, truck
   and bus, or the crops confirm a kind the detector never said — the word is "vehicle".

Everything is a pure function of its inputs, so the result is deterministic.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from needleforge.objects.fragments import LabelEvidence, confusable, normalize_label
from needleforge.records import TagScore

#: A family is seen on a crop when one of its classes scores at least this (the embedded
#: tagger's own reporting threshold: anything it names at all).
SUPPORT_MIN = 0.05
#: Another family is claimed on a crop when one of its classes scores at least this.
CONFIDENT_MIN = 0.35
#: A crop votes for a vehicle kind when its best vehicle class scores at least this.
KIND_MIN = 0.2
#: A track switched labels when its runner-up vehicle label has at least this many keyframes
#: and this share of the vehicle labels' summed score (one stray frame is no switch).
SWITCH_MIN_KEYFRAMES = 2
SWITCH_MIN_SHARE = 0.1
#: The word written for a car, truck or bus whose kind the evidence leaves open.
VEHICLE = "vehicle"


def _words(text: str) -> frozenset[str]:
    """Comma-separated class names, normalized."""
    return frozenset(normalize_label(w) for w in text.split(",") if w.strip())


@dataclasses.dataclass(frozen=True, slots=True)
class Family:
    """Tagger ``classes`` (single ImageNet classes) and ``groups`` (the tagger's summed group
    words: support only) that back the detector ``labels`` (none: it only contradicts)."""

    word: str
    labels: frozenset[str]
    classes: frozenset[str]
    groups: frozenset[str] = frozenset()


_BIRDS = _words("""African grey, American coot, American egret, European gallinule,
    albatross, bald eagle, bee eater, bittern, black grouse, black stork, black swan,
    brambling, bulbul, bustard, chickadee, cock, coucal, crane, dowitcher, drake, flamingo,
    goldfinch, goose, great grey owl, hen, hornbill, house finch, hummingbird, indigo bunting,
    jacamar, jay, junco, king penguin, kite, limpkin, little blue heron, lorikeet, macaw,
    magpie, ostrich, oystercatcher, partridge, peacock, pelican, prairie chicken, ptarmigan,
    quail, red-backed sandpiper, red-breasted merganser, redshank, robin, ruddy turnstone,
    ruffed grouse, spoonbill, sulphur-crested cockatoo, toucan, vulture, water ouzel,
    white stork""")
_DOGS = _words("""Afghan hound, Airedale terrier, American Staffordshire terrier,
    Appenzeller, Australian terrier, Bedlington terrier, Bernese mountain dog, Blenheim
    spaniel, Border collie, Border terrier, Boston bull, Bouvier des Flandres, Brabancon
    griffon, Brittany spaniel, Cardigan Welsh corgi, Chesapeake Bay retriever, Chihuahua,
    Dandie Dinmont terrier, Doberman pinscher, English foxhound, English setter, English
    springer spaniel, EntleBucher, Eskimo dog, French bulldog, German shepherd dog, German
    short-haired pointer, Gordon setter, Great Dane, Great Pyrenees, Greater Swiss Mountain
    dog, Ibizan hound, Irish setter, Irish terrier, Irish water spaniel, Irish wolfhound,
    Italian greyhound, Japanese spaniel, Kerry blue terrier, Labrador retriever, Lakeland
    terrier, Leonberg, Lhasa apso, Maltese dog, Mexican hairless, Newfoundland dog, Norfolk
    terrier, Norwegian elkhound, Norwich terrier, Old English sheepdog, Pekinese, Pembroke
    Welsh corgi, Pomeranian, Rhodesian ridgeback, Rottweiler, Saint Bernard, Saluki, Samoyed,
    Scotch terrier, Scottish deerhound, Sealyham terrier, Shetland sheepdog, Shih-Tzu,
    Siberian husky, Staffordshire bullterrier, Sussex spaniel, Tibetan mastiff, Tibetan
    terrier, Walker hound, Weimaraner, Welsh springer spaniel, West Highland white terrier,
    Yorkshire terrier, affenpinscher, basenji, basset hound, beagle, black-and-tan coonhound,
    bloodhound, bluetick, borzoi, boxer, briard, bull mastiff, cairn terrier, chow chow,
    clumber spaniel, cocker spaniel, collie, curly-coated retriever, dalmatian, flat-coated
    retriever, giant schnauzer, golden retriever, groenendael, keeshond, kelpie, komondor,
    kuvasz, malamute, malinois, miniature pinscher, miniature poodle, miniature schnauzer,
    otterhound, papillon, pug, redbone, schipperke, silky terrier, soft-coated wheaten
    terrier, standard poodle, standard schnauzer, toy poodle, toy terrier, vizsla, whippet,
    wire-haired fox terrier, timber wolf, white wolf, red wolf, coyote, dingo, dhole,
    African hunting dog, red fox, kit fox, Arctic fox, grey fox""")

#: Finer vehicle words and the tagger classes that confirm them (module docstring, step 3).
VEHICLE_KINDS: Mapping[str, frozenset[str]] = MappingProxyType({
    "van": _words("minivan, moving van, police van"),
    "pickup truck": _words("pickup truck"),
    "sports car": _words("sports car"),
    "race car": _words("racer"),
    "car": _words("cab, convertible, jeep, limousine, beach wagon, Model T"),
    "truck": _words("trailer truck, tow truck, garbage truck, fire engine"),
    "bus": _words("school bus, trolleybus, minibus"),
})
#: The detector label a kind is a kind of; a van is either a car or a truck.
_KIND_OF: Mapping[str, str | None] = MappingProxyType({
    "van": None, "pickup truck": "truck", "sports car": "car", "race car": "car",
    "car": "car", "truck": "truck", "bus": "bus"})
VEHICLE_LABELS = frozenset({"car", "truck", "bus"})

FAMILIES: tuple[Family, ...] = (
    Family("bird", frozenset({"bird"}), _BIRDS, _words("bird")),
    Family("dog", frozenset({"dog"}), _DOGS, _words("dog")),
    Family("cat", frozenset({"cat"}), _words(
        "tabby cat, tiger cat, Persian cat, Siamese cat, Egyptian cat, lynx, cougar"),
        _words("cat")),
    Family("bear", frozenset({"bear"}), _words(
        "brown bear, American black bear, ice bear, sloth bear"), _words("bear")),
    Family("teddy bear", frozenset({"teddy bear"}), _words("teddy bear, toyshop")),
    Family("food", frozenset({"cake", "donut", "pizza", "sandwich", "hot dog"}), _words("""
        bakery, confectionery, trifle, ice cream, ice lolly, chocolate sauce, dough,
        French loaf, bagel, pretzel, cheeseburger, hotdog, pizza pie, potpie, carbonara,
        meat loaf, burrito, guacamole, consomme, hot pot, mashed potato, eggnog, espresso,
        strawberry, orange, lemon, fig, pineapple, banana, jackfruit, custard apple,
        pomegranate, Granny Smith, candle, plate, tray, mixing bowl, soup bowl, cup,
        coffee mug, wooden spoon, spatula, ladle, dining table, restaurant, menu""")),
    Family(VEHICLE, VEHICLE_LABELS, frozenset().union(*VEHICLE_KINDS.values()) | _words("""
        ambulance, recreational vehicle, grille, car wheel, car mirror, golfcart, go-kart,
        tractor, forklift, snowplow, half track, amphibian, mobile home, streetcar,
        passenger car, tank"""), _words("car, truck, bus")),
    Family("box", frozenset(), _words("""chest, crate, carton, packet, pencil box, envelope,
        safe, hamper, shopping basket, medicine chest""")),
    Family("tool", frozenset(), _words("""power drill, hammer, screwdriver, chain saw,
        hatchet, plane, shovel, lawn mower, can opener, corkscrew""")),
)


def family_for(label: str) -> Family | None:
    """The family that vouches for detector ``label``, or None (never judged)."""
    key = normalize_label(label)
    return next((f for f in FAMILIES if key in f.labels), None)


def quorum(judged: int) -> int:
    """Crops that must agree out of ``judged``: 2, or half when fewer than 4 (as the
    verifier's crop check counts)."""
    return min(2, math.ceil(judged / 2))


@dataclasses.dataclass(frozen=True, slots=True)
class LabelVerdict:
    """What to write for a track: ``word`` (None: write nothing, drop it) and why."""

    word: str | None
    reason: str


def _reading(tags: Sequence[TagScore]) -> dict[str, float]:
    best: dict[str, float] = {}
    for t in tags:
        key = normalize_label(t.tag)
        best[key] = max(best.get(key, 0.0), t.score)
    return best


def _top(family: Family, reading: Mapping[str, float], *, groups: bool) -> float:
    """The best score of ``family``'s classes (and group words, with ``groups``) on a crop."""
    return max((s for c, s in reading.items()
                if c in family.classes or (groups and c in family.groups)), default=0.0)


def settle_label(
    labels: Sequence[LabelEvidence],
    crops: Sequence[Sequence[TagScore]],
    *,
    confusable_groups: Sequence[Sequence[str]] = (),
) -> LabelVerdict:
    """The word to write for a track the detector called ``labels`` (most evidence first)
    and whose crops the tagger answered ``crops`` (one list per crop; empty: silent).

    Rules in the module docstring.

    Raises:
        ValueError: when ``labels`` is empty.
    """
    if not labels:
        raise ValueError("settle_label: a track needs at least one detector label")
    readings = [_reading(tags) for tags in crops if tags]
    verdict = _family_verdict(labels, readings, confusable_groups)
    if verdict.word is None or verdict.word not in VEHICLE_LABELS:
        return verdict
    return _vehicle_verdict(verdict, labels, readings)


def _family_verdict(labels: Sequence[LabelEvidence], readings: Sequence[Mapping[str, float]],
                    groups: Sequence[Sequence[str]]) -> LabelVerdict:
    """Steps 1 and 2 of the module docstring."""
    current = normalize_label(labels[0].label)
    if not readings:
        return LabelVerdict(current, "the tagger judged no crop")
    seen = {normalize_label(e.label): 0 for e in labels}
    for label in seen:
        family = family_for(label)
        if family is not None:
            seen[label] = sum(_top(family, r, groups=True) >= SUPPORT_MIN for r in readings)
    best = max(seen, key=lambda lb: seen[lb])  # first of the most seen: detector order
    if seen[best] > 0:
        return LabelVerdict(best, f"the tagger sees {best!r} on {seen[best]} of "
                                  f"{len(readings)} crops")
    own = family_for(current)
    if own is None:
        return LabelVerdict(current, f"the tagger cannot judge {current!r}")
    claims: Counter[str] = Counter()
    for reading in readings:
        claimed = [f for f in FAMILIES
                   if f is not own and _top(f, reading, groups=False) >= CONFIDENT_MIN]
        claims.update(f.word for f in claimed)
    need = quorum(len(readings))
    if not claims or max(claims.values()) < need:
        return LabelVerdict(current, f"the tagger neither sees nor contradicts {current!r} "
                                     f"on {len(readings)} crops")
    word = min(claims, key=lambda w: (-claims[w], w))
    other = next(f for f in FAMILIES if f.word == word)
    said = f"the tagger says {word!r}, not {current!r}, on {claims[word]} of {len(readings)} crops"
    if len(other.labels) == 1:
        (target,) = other.labels
        if target in seen or confusable(current, target, groups):
            return LabelVerdict(target, said)
    return LabelVerdict(None, said)


def _vehicle_verdict(verdict: LabelVerdict, labels: Sequence[LabelEvidence],
                     readings: Sequence[Mapping[str, float]]) -> LabelVerdict:
    """Step 3 of the module docstring for a track written as car, truck or bus."""
    votes: Counter[str] = Counter()
    for reading in readings:
        scored = [(s, k) for k, classes in VEHICLE_KINDS.items()
                  for c, s in reading.items() if c in classes]
        if scored and max(scored)[0] >= KIND_MIN:
            votes[max(scored)[1]] += 1
    ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    kind: str | None = None
    if ranked and ranked[0][1] >= quorum(len(readings)) and (
            len(ranked) == 1 or ranked[1][1] < ranked[0][1]):
        kind = ranked[0][0]
    said = [e for e in labels if normalize_label(e.label) in VEHICLE_LABELS]
    if kind is not None and kind not in VEHICLE_LABELS:  # van, pickup truck, sports car...
        return LabelVerdict(kind, f"the tagger confirms {kind!r} on {votes[kind]} of "
                                  f"{len(readings)} crops")
    if kind is not None:
        if any(normalize_label(e.label) == kind for e in said):
            return LabelVerdict(kind, f"the tagger confirms {kind!r} on {votes[kind]} of "
                                      f"{len(readings)} crops")
        return LabelVerdict(VEHICLE, f"the detector said {_names(said)}, the tagger {kind!r}")
    if _switched(said):
        return LabelVerdict(VEHICLE, f"the detector switched between {_names(said)}")
    groups = {_KIND_OF[k] for k in votes} - {None}
    if len(groups) > 1:
        return LabelVerdict(VEHICLE, f"the crops show kinds of {sorted(str(g) for g in groups)}")
    return verdict


def _switched(said: Sequence[LabelEvidence]) -> bool:
    if len(said) < 2:
        return False
    total = sum(e.score_sum for e in said)
    runner = said[1]
    return (runner.keyframes >= SWITCH_MIN_KEYFRAMES
            and runner.score_sum >= SWITCH_MIN_SHARE * total)


def _names(said: Sequence[LabelEvidence]) -> str:
    return " and ".join(repr(e.label) for e in said)
