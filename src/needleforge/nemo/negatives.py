"""Negative scenes: distractors from the target's own video that cannot be mistaken for it.

NeMo (seed 001, Sec. 3.2.2 Stage 2) samples negatives from the same video source so the
montage keeps one shooting style, and requires that their tables hold no tag of the target.
Here a scene is a negative for a target when it

* belongs to the same video and is not the target scene,
* lasts at least ``min_negative_s`` (shorter flashes are hard to see and to cut),
* holds none of the **excluded terms**, neither as a tag nor as an object label: every
  term the written question names (its description and text, read against the tables'
  vocabulary), every ``text:`` tag showing on-screen text it quotes
  (:func:`needleforge.scenes.onscreen.shows`), and for an object needle the object's
  label. A term "held" includes tags that contain it as whole words (a ``tabby cat`` tag
  excludes a scene from a ``cat`` question), see :func:`needleforge.records.phrases.holds`.

Negatives are chosen by **what the question says**, not by the target's top tags: on real
footage a common label ("person": an arm, a hand, a poster) is among the top tags of nearly
every scene, and excluding it emptied every pool although no question named it. So the
question is written first, and a scene that shows anything it names is never a negative.

People the question describes by their clothes ("the person in black") are excluded by that
description, not by the word (:mod:`needleforge.records.attire`): a scene whose every person
track wears a clearly other colour may serve, while a person of a near colour, a person whose
clothes were not measured, or a "person" tag with no track to compare keeps it out.

The eligible scenes are listed by scene index and shuffled with the caller's seeded
``random.Random``, so the order depends only on the seed and the tables.

**Negatives first** (:func:`crowded_terms`). The NeMo paper draws tag-disjoint negatives and
then asks the question; a description fixed first ("people, cars and a sports ball") can name a
term most other scenes hold ("people", at a lectern and on a street alike) and so find no
negative at all. Before a scene needle is written, its terms are therefore read against the
negatives that exist: a term whose exclusion would leave too few candidates to fill a short
montage is *crowded* for that target, and the describer leaves it out like a term common to
the whole video.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from needleforge.nemo.tables import SceneTables
from needleforge.nemo.targets import Target
from needleforge.params import NemoParams
from needleforge.records import ObjectTrack, Scene, SceneTag
from needleforge.records.attire import could_be
from needleforge.records.phrases import (
    ATTRIBUTE_WORDS,
    holds,
    named_terms,
    normalize,
    ranked_tags,
)
from needleforge.scenes import onscreen

_EPS = 1e-9


def excluded_terms(target: Target, tables: SceneTables, *, text: str) -> frozenset[str]:
    """What a negative of ``target`` must not hold (normalized): every term of the tables'
    vocabulary that ``text`` (the written description and question) names, and for an
    object needle its label, with every term inside one of those ("red car" holds "car").
    Colour and position words are attributes, not terms."""
    vocabulary = tables.vocabulary - ATTRIBUTE_WORDS
    named = set(named_terms(onscreen.without_quotes(text), vocabulary))
    # Quoted on-screen text: every text tag showing a quote (case, spaces, 1 in 5 wrong).
    named |= {t for t in vocabulary if onscreen.is_text_tag(t)
              and any(onscreen.shows(onscreen.text_of(t), q) for q in onscreen.quotes(text))}
    if target.target_object is not None:
        named.add(normalize(target.target_object.tag))
    # "red car" names a car too: every term inside a named one is excluded with it.
    return frozenset(named | {t for t in vocabulary if holds(named, t)})


def clashes(scene: Scene, tables: SceneTables, *, excluded: frozenset[str],
            attire: Mapping[str, str] | None = None) -> list[str]:
    """The excluded terms ``scene`` holds, sorted (empty when it may be a negative). A term
    in ``attire`` (``{"person": "black"}``) is held only by a track that could be the person
    described, or by a tag no track of it backs."""
    view = tables.view(scene)
    terms = view.terms
    dressed = {normalize(k): v for k, v in (attire or {}).items()}
    held = []
    for term in sorted(excluded):
        if not holds(terms, term):
            continue
        colour = dressed.get(term)
        if colour is not None:
            tracks = [o for o in view.objects if holds((o.tag,), term)]
            if tracks and not any(could_be(colour, o.attributes.colour) for o in tracks):
                continue
        held.append(term)
    return held


def select_negatives(
    target: Target, tables: SceneTables, *, params: NemoParams, rng: random.Random,
    excluded: frozenset[str] | None = None, attire: Mapping[str, str] | None = None,
) -> list[Scene]:
    """Every eligible negative scene of ``target``, in a seeded random order.

    ``excluded`` is what a negative may not hold (:func:`excluded_terms` of the written
    question); None = the object's label only (nothing for a scene needle). ``attire``: the
    people the question describes by their clothes (:func:`clashes`).

    Raises:
        ValueError: when the target's video has no scenes in ``tables``.
    """
    scenes = tables.scenes_by_video.get(target.video_id)
    if not scenes:
        raise ValueError(f"target {target.target_id}: video {target.video_id} has no scenes")
    if excluded is None:
        excluded = excluded_terms(target, tables, text="")
    pool = [
        scene for scene in scenes
        if scene.scene_id != target.scene.scene_id
        and scene.duration_s + _EPS >= params.min_negative_s
        and not clashes(scene, tables, excluded=excluded, attire=attire)
    ]
    rng.shuffle(pool)
    return pool


def crowded_terms(target: Target, tables: SceneTables, *, params: NemoParams) -> frozenset[str]:
    """The terms of scene target ``target`` a description may not name, because a montage
    could then not be filled with negatives that hold none of them (see the module docstring).

    The target's terms are taken in the order a describer prefers them (its objects, the
    most prominent first, then its tags by score); each is kept while the candidates that
    hold none of the kept terms still give ``min_negatives`` scenes and, with the target,
    ``short_min_s`` seconds; a term that would break that is crowded. So the description
    keeps the terms that tell the target apart from the negatives at hand. Empty for an
    object target (its label is the question), and when the video's other scenes could not
    fill a montage even if nothing were named.
    """
    if target.target_object is not None:
        return frozenset()
    candidates = [s for s in tables.scenes_by_video.get(target.video_id, ())
                  if s.scene_id != target.scene.scene_id
                  and s.duration_s + _EPS >= params.min_negative_s]
    if not _fills(candidates, target.scene.duration_s, params=params):
        return frozenset()  # too few scenes whatever is named: the plan says so
    terms = {s.scene_id: tables.view(s).terms for s in candidates}
    pool, crowded = candidates, set()
    for term in _preferred_terms(tables.view(target.scene).objects,
                                 tables.tags_by_scene.get(target.scene.scene_id, ())):
        left = [s for s in pool if not holds(terms[s.scene_id], term)]
        if _fills(left, target.scene.duration_s, params=params):
            pool = left
        else:
            crowded.add(term)
    return frozenset(crowded)


def _preferred_terms(objects: Sequence[ObjectTrack], tags: Sequence[SceneTag]) -> list[str]:
    """Object labels by prominence (visible time x area), then tags by rank, each once."""
    ranked = sorted(objects, key=lambda o: (-(o.visible_s * o.mean_area_frac), o.object_id))
    terms = [normalize(o.tag) for o in ranked] + list(ranked_tags(tags))
    return [t for t in dict.fromkeys(terms) if t and t not in ATTRIBUTE_WORDS]


def _fills(scenes: Sequence[Scene], target_s: float, *, params: NemoParams) -> bool:
    """Whether ``scenes`` could fill a short montage beside a target of ``target_s``."""
    return (len(scenes) >= params.min_negatives
            and target_s + sum(s.duration_s for s in scenes) + _EPS >= params.short_min_s)


def drawable_scenes(targets: Sequence[Target], tables: SceneTables, *,
                    params: NemoParams) -> list[Scene]:
    """Every scene a montage of ``targets`` may take as a negative (and so the probe may
    scan): those at least ``min_negative_s`` long of the targets' videos, by video in target
    order, then by scene index (the order planning goes)."""
    videos = dict.fromkeys(t.video_id for t in targets)
    return [scene for video_id in videos for scene in tables.scenes_by_video[video_id]
            if scene.duration_s + 1e-9 >= params.min_negative_s]
