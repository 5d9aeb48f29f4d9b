"""Embedded (offline, model-free) question writer and verifier: evidence from the tables.

:class:`EmbeddedDescriber` writes from the representation tables only — never from the
subtitles. An object needle is described by the object's referring expression (unique within
its scene by construction) and asked with one of our object templates; a scene needle is
described from its concrete objects and its top tags ("A scene with a white cat and two cups,
in a setting tagged brick wall and street.") and asked with a scene template. The template is
picked by a hash of the target id and the seed and recorded as ``template_id``.

:class:`EmbeddedVerifier` re-reads any describer's text against the tables of the target and
of the montage's negatives (seed 001, Table 16) and says which word or scene decided it.

**Verification rules.** The text is read back against the tables, so any describer's output
can be checked. The **vocabulary** is every tag and object label of the target and of the
montage's negatives; a description "names" a term when it contains it as whole words (or
its plural), longer terms first (:mod:`needleforge.records.phrases`); colour and position
words are left out of it, since they are checked against object attributes instead.

Object needle — passes only when all hold:

1. the description and the question name the target object's label, and agree on the colours
   and positions ("on the left") they name;
2. the target object has every colour/position named, and the target scene holds every other
   vocabulary term named (no "next to a dog" when no dog was seen there);
3. no negative **could also be meant**: a negative clashes when one of its objects carries the
   label and has a named colour and position (an object whose colour is unknown counts as a
   match), or when it is tagged with the label but has no tracked object to compare.

Scene needle — passes only when the description names at least one vocabulary term or
quotes on-screen text (else there is no evidence to check), the target holds every term
named, the question names the same terms, and no negative holds **any** of them (a negative
showing one thing the question names is a second place a viewer could point at). Quoted
text ("on-screen text reads 'JULY'", :mod:`needleforge.scenes.onscreen`) is checked like a
term: the question quotes the same, one of the target's ``text:`` tags shows it, and no
negative's text shows it (case, spaces and punctuation aside, one character in five wrong).

The describer names a scene by its on-screen text when it has some that holds (a
``text:`` tag of legible text the representation read on two keyframes) and that is not
common in its video: the shortest quotable part (:func:`text_part`).

Both fail when there are no negatives, or when the description repeats a phrase of the
target's subtitles that the tables do not back (subtitles are never the only evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from needleforge.backends.embedded.labels import COCO_LABELS, IMAGENET_COARSE
from needleforge.backends.writer_prompts import (
    TEMPLATES_VERSION,
    choose_template,
    join_words,
    sentence,
    with_article,
)
from needleforge.backends.writing import (
    SceneView,
    Skip,
    TargetView,
    Verdict,
    VerifyRequest,
    WrittenNeedle,
)
from needleforge.params import DEFAULT_ABSTRACT_LABELS
from needleforge.records import NeedleType, ObjectTrack
from needleforge.records.attire import could_be
from needleforge.records.phrases import (
    ATTRIBUTE_WORDS,
    UNTELLABLE_MARK,
    copied_phrase,
    count_phrase,
    holds,
    is_person,
    named_colours,
    named_positions,
    named_terms,
    normalize,
    plural,
    position_phrase,
    ranked_tags,
    term_spans,
    with_colour,
)
from needleforge.scenes import closeup, onscreen
from needleforge.scenes.bodies import BODY_TAG
from needleforge.scenes.palette import IN_COLOUR, SHOT_WORDS
from needleforge.scenes.walking import WALK_TAG

#: Tags measured on people that the writer names in its own words, or never.
_MEASURED_PEOPLE = frozenset({BODY_TAG, WALK_TAG, closeup.CLOSE_UP, closeup.FACE_TAG})

#: Words a detector (and the tagger's coarse groups) can name: tags a second model can check.
DETECTOR_WORDS = frozenset(normalize(w) for w in (*COCO_LABELS.values(), *IMAGENET_COARSE))
#: The smallest share of the frame each object of a counted label must cover (see
#: :meth:`EmbeddedDescriber._object_phrases`).
MIN_COUNTABLE_AREA = 0.02
#: The smallest share of the frame the largest object of a label must cover for a scene
#: needle to name it: 0.002 is about 20 x 20 pixels of a 640 x 360 frame; a "sports ball" of
#: 0.0005 on a street was a speck no viewer could point at.
MIN_NAMEABLE_AREA = 0.002
#: How many clashing negatives a failure reason lists before "(+N more)".
_LISTED = 3


def _quoted(terms: Iterable[str]) -> str:
    return ", ".join(repr(t) for t in sorted(terms))


def _listed(items: list[str]) -> str:
    more = f" (+{len(items) - _LISTED} more)" if len(items) > _LISTED else ""
    return "; ".join(items[:_LISTED]) + more


def _vocabulary(request: VerifyRequest) -> frozenset[str]:
    terms = request.target.as_scene_view().terms
    for negative in request.negatives:
        terms |= negative.terms
    return terms - ATTRIBUTE_WORDS


def _common_failure(request: VerifyRequest) -> Verdict | None:
    """Failures shared by both needle types: no negatives, copied subtitles."""
    if not request.negatives:
        return Verdict(False, "no negatives in the montage to check the description against")
    copied = copied_phrase(request.description, request.target.subtitle_text,
                           allowed=_vocabulary(request))
    if copied is not None:
        return Verdict(False, f"description repeats subtitle text {copied!r} that no tag or "
                              f"object backs (subtitles may not be the only evidence)")
    return None


def _appearance(obj: ObjectTrack) -> str:
    words = [with_colour(normalize(obj.tag), obj.attributes.colour),
             position_phrase(obj.attributes.position.strip())]
    return "a " + " ".join(w for w in words if w)


def _object_clash(
    negative: SceneView, label: str, *, colours: frozenset[str], positions: frozenset[str]
) -> str | None:
    """Why ``negative`` could also be meant by the description, or None."""
    sid = negative.scene.scene_id
    carriers = [o for o in negative.objects if holds((o.tag,), label)]
    for obj in carriers:
        colour, position = obj.attributes.colour.strip(), obj.attributes.position.strip()
        if colours and colour and not _could_be(label, colours, colour):
            continue
        if positions and position and position not in positions:
            continue
        return f"negative {sid} also shows {_appearance(obj)} ({obj.object_id})"
    if not carriers and holds(negative.tag_names, label):
        return f"negative {sid} is tagged with {label!r} and has no tracked object to compare"
    return None


def _could_be(label: str, colours: frozenset[str], colour: str) -> bool:
    """Whether an object of ``colour`` could be the one described in ``colours``: for people
    (clothing) any near colour counts (:func:`needleforge.records.attire.could_be`)."""
    if is_person(label):
        return any(could_be(named, colour) for named in colours)
    return colour in colours


def _target_mismatch(
    obj: ObjectTrack, label: str, *, colours: frozenset[str], positions: frozenset[str]
) -> str | None:
    """Why the named colours/positions do not fit the target object, or None."""
    for kind, named, actual in (("colour", colours, obj.attributes.colour.strip()),
                                ("position", positions, obj.attributes.position.strip())):
        if not named or actual in named:
            continue
        if not actual:
            return (f"cannot confirm {kind} {_quoted(named)}: the target {label} has no "
                    f"{kind} attribute")
        return f"the target {label} has {kind} {actual!r}, not {_quoted(named)}"
    return None


def _object_claims(
    text: str, label: str
) -> tuple[frozenset[str], frozenset[str]] | None:
    """Colours and positions ``text`` names besides the label; None when it lacks the label."""
    spans = term_spans(text, (label,))
    if label not in spans:
        return None
    return named_colours(text, skip=spans[label]), named_positions(text)


def verify_object(request: VerifyRequest) -> Verdict:
    """The verdict on an object needle (rules in the module docstring)."""
    obj = request.target.target_object
    if obj is None:
        return Verdict(False, "object question without a target object")
    failure = _common_failure(request)
    if failure is not None:
        return failure
    label = normalize(obj.tag)
    claims = _object_claims(request.description, label)
    if claims is None:
        return Verdict(False, f"description {request.description!r} does not name the target's "
                              f"label {label!r}")
    colours, positions = claims
    if _object_claims(request.question, label) != claims:
        return Verdict(False, f"question {request.question!r} does not name {label!r} with the "
                              f"description's colours and positions")
    mismatch = _target_mismatch(obj, label, colours=colours, positions=positions)
    if mismatch is not None:
        return Verdict(False, mismatch)
    others = named_terms(request.description, _vocabulary(request)) - {label}
    missing = sorted(t for t in others if not holds(request.target.as_scene_view().terms, t))
    if missing:
        return Verdict(False, f"description names {_quoted(missing)}, which the target scene "
                              f"does not show")
    clashes = [c for n in request.negatives
               if (c := _object_clash(n, label, colours=colours, positions=positions))]
    if clashes:
        return Verdict(False, f"ambiguous: {_listed(clashes)}")
    holding = sum(1 for n in request.negatives if holds(n.terms, label))
    reason = f"unique: {holding} of {len(request.negatives)} negatives hold a {label!r}"
    if holding:
        named = " ".join([*sorted(colours), *(position_phrase(p) for p in sorted(positions))])
        reason += f", none {named}" if named else ""
    return Verdict(True, reason)


def verify_scene(request: VerifyRequest) -> Verdict:
    """The verdict on a scene needle (rules in the module docstring)."""
    failure = _common_failure(request)
    if failure is not None:
        return failure
    vocabulary = _vocabulary(request)
    claims = named_terms(onscreen.without_quotes(request.description), vocabulary)
    texts = onscreen.quotes(request.description)
    if not claims and not texts:
        return Verdict(False, f"no checkable evidence: the description names none of the "
                              f"{len(vocabulary)} tags and labels of the montage's scenes "
                              f"and quotes no on-screen text")
    target_terms = request.target.as_scene_view().terms
    missing = sorted(c for c in claims if not holds(target_terms, c))
    if missing:
        return Verdict(False, f"the target scene does not hold {_quoted(missing)}, named by "
                              f"the description")
    asked = named_terms(onscreen.without_quotes(request.question), vocabulary)
    if asked != claims:
        return Verdict(False, f"question names {_quoted(asked)} but the description names "
                              f"{_quoted(claims)}")
    failure = _text_failure(request, texts)
    if failure is not None:
        return failure
    held = [(sorted(c for c in claims if holds(n.terms, c)), n.scene.scene_id)
            for n in request.negatives]
    shown = [f"negative {sid} also holds {_quoted(terms)}" for terms, sid in held if terms]
    if shown:
        return Verdict(False, f"ambiguous: {_listed(shown)}")
    named = _quoted([*claims, *(f"text {t}" for t in texts)])
    return Verdict(True, f"unique: none of {len(request.negatives)} negatives holds any of "
                         f"{named}")


def scene_text(view: SceneView | TargetView) -> list[str]:
    """The on-screen text lines the tables hold for a scene (its ``text:`` tags)."""
    return list(dict.fromkeys(onscreen.text_of(t.tag) for t in view.tags
                              if onscreen.is_text_tag(t.tag)))


def _text_failure(request: VerifyRequest, texts: Sequence[str]) -> Verdict | None:
    """Why the quoted on-screen text does not tell the target apart, or None: the question
    must quote the same text, the target's text must show every quote, and no negative's
    text may show one (:func:`needleforge.scenes.onscreen.shows`: whitespace and case
    aside, one character in five may differ)."""
    asked = onscreen.quotes(request.question)
    if asked != list(texts):
        return Verdict(False, f"question quotes on-screen text {asked!r} but the description "
                              f"quotes {list(texts)!r}")
    lines = scene_text(request.target)
    for quote in texts:
        if onscreen.shown_by(lines, quote) is None:
            return Verdict(False, f"the target scene's on-screen text {lines!r} does not show "
                                  f"{quote!r}, quoted by the description")
    shown = [f"negative {n.scene.scene_id} also shows text {line!r}" for n in request.negatives
             for quote in texts if (line := onscreen.shown_by(scene_text(n), quote))]
    return Verdict(False, f"ambiguous: {_listed(shown)}") if shown else None


class EmbeddedDescriber:
    """Writes needles from tags, labels and referring expressions with our templates.

    ``abstract_labels`` are object labels too broad to ground (sky, road…): such objects are
    skipped as object needles and left out of scene descriptions. ``scene_top_tags`` tags and
    up to ``max_objects`` object labels describe a scene. Tags are named only when they are
    words of the detector's vocabulary (``car``, ``tie``), unless ``fine_tags``: a finer
    tagger class ("windsor tie", "steel arch bridge") is something only the tagger that
    named it can see, so no second model can confirm it, and on real footage it was as often
    wrong as right (a fish tank as "beaker", towers at night as "steel arch bridge").
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        abstract_labels: Sequence[str] = DEFAULT_ABSTRACT_LABELS,
        scene_top_tags: int = 3,
        max_objects: int = 3,
        fine_tags: bool = False,
    ) -> None:
        if scene_top_tags < 1 or max_objects < 0:
            raise ValueError(f"scene_top_tags = {scene_top_tags} must be >= 1 and "
                             f"max_objects = {max_objects} >= 0")
        self._seed = seed
        self._abstract = frozenset(normalize(label) for label in abstract_labels)
        self._top_tags = scene_top_tags
        self._max_objects = max_objects
        self._fine_tags = fine_tags

    @property
    def name(self) -> str:
        """Recorded as ``questions.backend``."""
        return "embedded-templates"

    @property
    def version(self) -> str:
        """The template set's version: it changes with any template text."""
        return TEMPLATES_VERSION

    def write(self, view: TargetView, *, needle_type: NeedleType) -> WrittenNeedle | Skip:
        """The object or scene needle of ``view``, or a :class:`Skip` naming why not.

        Raises:
            ValueError: an object needle without a target object, or a scene needle with one.
        """
        if (needle_type == "object") != (view.target_object is not None):
            raise ValueError(f"needle_type {needle_type!r} does not fit view of "
                             f"{view.scene.scene_id} with target object {view.target_object!r}")
        if view.target_object is not None:
            return self._write_object(view.target_object)
        return self._write_scene(view)

    def _write_object(self, obj: ObjectTrack) -> WrittenNeedle | Skip:
        label = normalize(obj.tag)
        if label in self._abstract:
            return Skip(f"object {obj.object_id}: label {label!r} is too abstract to ground")
        description = " ".join(obj.referring_expression.split())
        if not description:
            description = f"the {label}"
        if "(object " in description or UNTELLABLE_MARK in description:
            return Skip(f"object {obj.object_id}: referring expression {description!r} cannot "
                        f"tell it apart from the look-alikes in its scene")
        description = _dressed(description, obj)
        template_id, text = choose_template("object", key=obj.object_id, seed=self._seed)
        return WrittenNeedle("object", description, text.format(obj=description), template_id)

    def _object_phrases(
        self, objects: Sequence[ObjectTrack], *, common: frozenset[str]
    ) -> list[tuple[str, str]]:
        """``(label, phrase)`` per nameable label, most prominent first: "a cat", "two people".

        Nameable: concrete (not abstract), not common in the video, and seen on two
        consecutive keyframes at least once (a track that flickers is not evidence), and
        large enough to see (:data:`MIN_NAMEABLE_AREA`).

        No colour word: a scene needle's verifiers check which things a scene holds, not
        their colours (a white cockatoo read "brown" at its box centre). A count only where a
        viewer can check it: every object of the label at least :data:`MIN_COUNTABLE_AREA`
        of the frame ("two people" at a lectern); smaller ones are a bare plural ("books" on
        a shelf where the detector boxed two of forty).
        """
        groups: dict[str, list[ObjectTrack]] = defaultdict(list)
        for obj in objects:
            label = normalize(obj.tag)
            if label and label not in self._abstract and label not in common \
                    and obj.visible_s > 0:
                groups[label].append(obj)
        groups = {label: group for label, group in groups.items()
                  if max(o.mean_area_frac for o in group) >= MIN_NAMEABLE_AREA}
        ranked = sorted(groups.items(), key=lambda kv: (
            -max(o.visible_s * o.mean_area_frac for o in kv[1]), kv[0]))
        phrases = []
        for label, group in ranked[: self._max_objects]:
            if len(group) > 1:
                countable = all(o.mean_area_frac >= MIN_COUNTABLE_AREA for o in group)
                phrases.append((label, count_phrase(len(group), label) if countable
                                else plural(label)))
                continue
            phrases.append((label, with_article(label)))
        return phrases

    def _write_scene(self, view: TargetView) -> WrittenNeedle | Skip:
        objects = self._object_phrases(view.objects, common=view.common_terms)
        labels = view.as_scene_view().labels
        ranked = [t for t in ranked_tags(view.tags) if t not in view.common_terms]
        # Whole-shot words a measure gave ("black-and-white"): they say what kind of scene.
        # "In colour" only when nothing else tells the scene apart (below): beside anything
        # else it says nothing a viewer needs.
        shot_words = sorted(t for t in ranked if t in SHOT_WORDS and t != IN_COLOUR)
        shot = f"a {', '.join(shot_words)} scene" if shot_words else "a scene"
        tags = [t for t in ranked if t not in labels and t not in SHOT_WORDS
                and t not in _MEASURED_PEOPLE and not onscreen.is_text_tag(t)
                and (self._fine_tags or t in DETECTOR_WORDS)][: self._top_tags]
        quote = text_part(view)
        # Someone walking (a measured action) says more than "people", and lets shots of
        # people standing or sitting serve as negatives.
        # So does a close-up of a face, the person being the face.
        acts = [t for t in (WALK_TAG, closeup.CLOSE_UP) if t in ranked]
        things = [p for label, p in objects if not (acts and is_person(label))]
        things += [with_article(closeup.CLOSE_UP) if t == closeup.CLOSE_UP else t for t in acts]
        if quote is not None:
            clause = f"{shot} where {onscreen.phrase(quote)}"
        elif things and tags:
            clause = f"{shot} with {join_words(things)}, in a setting tagged {join_words(tags)}"
        elif things:
            clause = f"{shot} with {join_words(things)}"
        elif tags:
            clause = f"{shot} tagged {join_words(tags)}"
        elif shot != "a scene":
            clause = shot
        elif IN_COLOUR in ranked:
            clause = f"a scene {IN_COLOUR}"
        else:
            return Skip(f"scene {view.scene.scene_id}: nothing to describe that holds up and "
                        f"tells it apart (common in its video: "
                        f"{sorted(view.common_terms) or 'nothing'})")
        template_id, text = choose_template("scene", key=view.scene.scene_id, seed=self._seed)
        return WrittenNeedle("scene", sentence(clause), text.format(scene=clause), template_id)


def text_part(view: TargetView) -> str | None:
    """The on-screen text a scene is best asked about, or None: the shortest part
    (:func:`needleforge.scenes.onscreen.parts`) of the scene's text that holds (read on two
    keyframes, :func:`needleforge.scenes.onscreen.holds`) that no line common in its video
    shows. Text comes first when a scene has it: a viewer reads it at a glance,
    the reader can read it again, and few other scenes show it (so negatives abound)."""
    common = [onscreen.text_of(t) for t in view.common_terms if onscreen.is_text_tag(t)]
    lines = dict.fromkeys(onscreen.text_of(t.tag) for t in view.tags
                          if onscreen.is_text_tag(t.tag) and onscreen.holds(t.score)
                          and normalize(t.tag) not in view.common_terms)
    ranked = sorted((len(onscreen.squashed(p)), i, j, p) for i, line in enumerate(lines)
                    for j, p in enumerate(onscreen.parts(line)))
    return next((p for *_, p in ranked if onscreen.shown_by(common, p) is None), None)


def _dressed(description: str, obj: ObjectTrack) -> str:
    """``description`` with a person's clothing colour when it is known and not named yet
    ("the person on the left" → "the person in black on the left"): people are told by
    what they wear, and a negative showing people in other clothes can then serve
    (:mod:`needleforge.records.attire`)."""
    label, colour = normalize(obj.tag), obj.attributes.colour.strip()
    spans = term_spans(description, (label,)).get(label)
    if not is_person(label) or not colour or not spans or named_colours(description):
        return description
    start, end = spans[0]
    return f"{description[:start]}{with_colour(label, colour)}{description[end:]}"


class EmbeddedVerifier:
    """Checks a written needle against the tables (rules in the module docstring)."""

    @property
    def name(self) -> str:
        """Recorded as ``verifications.verifier``."""
        return "embedded-evidence"

    @property
    def version(self) -> str:
        """Bumped whenever a verification rule of this module changes."""
        return "1"

    def verify(self, request: VerifyRequest) -> Verdict:
        """Pass only on positive evidence of fit and uniqueness; every verdict says why."""
        if request.needle_type == "object":
            return verify_object(request)
        return verify_scene(request)
