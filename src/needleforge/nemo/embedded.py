"""Embedded (offline, model-free) question writer and verifier: evidence from the tables.

:class:`EmbeddedDescriber` writes from the representation tables only — never from the
subtitles. An object needle is described by the object's referring expression (unique within
its scene by construction) and asked with one of our object templates; a scene needle is
described from its concrete objects and its top tags ("A scene with a white cat and two cups,
in a setting tagged brick wall and street.") and asked with a scene template. The template is
picked by a hash of the target id and the seed and recorded as ``template_id``.

:class:`EmbeddedVerifier` re-reads any describer's text against the tables of the target and
of the montage's negatives (seed 001, Table 16) and says which word or scene decided it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from needleforge.config import DEFAULT_ABSTRACT_LABELS
from needleforge.nemo.evidence import normalize, ranked_tags
from needleforge.nemo.protocols import Skip, TargetView, Verdict, VerifyRequest, WrittenNeedle
from needleforge.nemo.templates import (
    TEMPLATES_VERSION,
    choose_template,
    join_words,
    sentence,
    with_article,
)
from needleforge.nemo.verify_rules import verify_object, verify_scene
from needleforge.objects.expressions import number_word, plural
from needleforge.records import NeedleType, ObjectTrack


class EmbeddedDescriber:
    """Writes needles from tags, labels and referring expressions with our templates.

    ``abstract_labels`` are object labels too broad to ground (sky, road…): such objects are
    skipped as object needles and left out of scene descriptions. ``scene_top_tags`` tags and
    up to ``max_objects`` object labels describe a scene.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        abstract_labels: Sequence[str] = DEFAULT_ABSTRACT_LABELS,
        scene_top_tags: int = 3,
        max_objects: int = 3,
    ) -> None:
        if scene_top_tags < 1 or max_objects < 0:
            raise ValueError(f"scene_top_tags = {scene_top_tags} must be >= 1 and "
                             f"max_objects = {max_objects} >= 0")
        self._seed = seed
        self._abstract = frozenset(normalize(label) for label in abstract_labels)
        self._top_tags = scene_top_tags
        self._max_objects = max_objects

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
        if "(object " in description:
            return Skip(f"object {obj.object_id}: referring expression {description!r} tells "
                        f"it apart only by its index in the scene")
        template_id, text = choose_template("object", key=obj.object_id, seed=self._seed)
        return WrittenNeedle("object", description, text.format(obj=description), template_id)

    def _object_phrases(self, objects: Sequence[ObjectTrack]) -> list[tuple[str, str]]:
        """``(label, phrase)`` per concrete label, most prominent first: "a white cat"."""
        groups: dict[str, list[ObjectTrack]] = defaultdict(list)
        for obj in objects:
            label = normalize(obj.tag)
            if label and label not in self._abstract:
                groups[label].append(obj)
        ranked = sorted(groups.items(), key=lambda kv: (
            -max(o.visible_s * o.mean_area_frac for o in kv[1]), kv[0]))
        phrases = []
        for label, group in ranked[: self._max_objects]:
            if len(group) > 1:
                phrases.append((label, f"{number_word(len(group))} {plural(label)}"))
                continue
            colour = group[0].attributes.colour.strip()
            phrases.append((label, with_article(f"{colour} {label}" if colour else label)))
        return phrases

    def _write_scene(self, view: TargetView) -> WrittenNeedle | Skip:
        objects = self._object_phrases(view.objects)
        named = {label for label, _ in objects}
        tags = [t for t in ranked_tags(view.tags)[: self._top_tags] if t not in named]
        if objects and tags:
            clause = (f"a scene with {join_words([p for _, p in objects])}, "
                      f"in a setting tagged {join_words(tags)}")
        elif objects:
            clause = f"a scene with {join_words([p for _, p in objects])}"
        elif tags:
            clause = f"a scene tagged {join_words(tags)}"
        else:
            return Skip(f"scene {view.scene.scene_id}: no tags or concrete objects to describe")
        template_id, text = choose_template("scene", key=view.scene.scene_id, seed=self._seed)
        return WrittenNeedle("scene", sentence(clause), text.format(scene=clause), template_id)


class EmbeddedVerifier:
    """Checks a written needle against the tables; see :mod:`needleforge.nemo.verify_rules`."""

    @property
    def name(self) -> str:
        """Recorded as ``verifications.verifier``."""
        return "embedded-evidence"

    @property
    def version(self) -> str:
        """Bumped whenever a rule in :mod:`~needleforge.nemo.verify_rules` changes."""
        return "1"

    def verify(self, request: VerifyRequest) -> Verdict:
        """Pass only on positive evidence of fit and uniqueness; every verdict says why."""
        if request.needle_type == "object":
            return verify_object(request)
        return verify_scene(request)
