"""Which negative candidates a short montage may take: the plan's ``accept`` check.

A negative must not show what the written question names. The tables already keep out
scenes tagged with it (:mod:`~needleforge.nemo.negatives`); this check looks where tags fall
short, with the same rules the looking verifier applies later, so that a montage is planned
from negatives the verifier will not refuse: the camera set-up of the target (a returning
shot), a frame a viewer could take for the black-and-white, in-colour or mostly-one-colour
scene asked about, someone walking, and the probe's sightings of every detector label the
question names (:mod:`~needleforge.nemo.checks.negative_scan`).

Each refusal can be laid at one term's door (``blame``): the term whose check refused the
scene. A scene needle whose montage could not be filled is then written again without the
most blamed term (:mod:`~needleforge.nemo.generate`), as the tables' crowded terms are left
out before the first writing: what the negatives at hand show, the description does not name.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from needleforge.backends.base import Keyframe
from needleforge.nemo.checks.negative_probe import NegativeProbe, Refusal
from needleforge.nemo.checks.same_setup import SetupMatcher
from needleforge.nemo.tables import SceneTables
from needleforge.nemo.targets import Target
from needleforge.records import Scene, Sighting
from needleforge.records.attire import SIGHTING_SEPARATOR
from needleforge.records.phrases import normalize
from needleforge.scenes import closeup, colour_cast, onscreen, walking
from needleforge.scenes.palette import BLACK_AND_WHITE, IN_COLOUR, clearly_in_colour, colourless


@dataclasses.dataclass(frozen=True, slots=True)
class RejectedNegative:
    """A negative candidate of object target ``target_id`` that the probe refused: it saw
    the label there (``check == "label"``) or the object itself (``"instance"``)."""

    target_id: str
    sighting: Sighting
    check: Literal["label", "instance"] = "label"


def negative_acceptor(
    target: Target, rejected: list[RejectedNegative], tables: SceneTables, *,
    frames: Callable[[Scene], Sequence[Keyframe]] | None, probe: NegativeProbe | None,
    setup: SetupMatcher | None, excluded: frozenset[str], attire: Mapping[str, str],
    blame: collections.Counter[str] | None = None,
) -> Callable[[Scene], bool] | None:
    """The plan's ``accept`` check for ``target``: a negative of a scene needle may not show
    the target's own camera set-up (``setup``), nor, when the question names a
    black-and-white scene, a frame a viewer could take for one
    (:func:`~needleforge.scenes.palette.clearly_in_colour`, the looking verifier's own rule,
    on the frames it will look at), or when it names a scene in colour, a frame with any
    colour (:func:`~needleforge.scenes.palette.colourless`), or when it names a colour cast
    ("a mostly orange scene"), a frame that looks that colour
    (:func:`~needleforge.scenes.colour_cast.looks_like`, the same rule), or when it names
    someone walking, a person who moves or stands over a moving camera
    (:func:`~needleforge.scenes.walking.may_walk`, on its tracks and keyframes), or when it
    names a close-up of a face, a face near the camera (the stored largest face,
    :func:`~needleforge.scenes.closeup.negative_refused`); then probe each
    negative for the object's label and for everything else the question names
    (``excluded``; people it describes by their clothes, ``attire``, only in clothes that
    could be those), noting every probe refusal in ``rejected``; None when there is nothing
    to check. ``frames`` gives a scene's keyframes (None: no pixels to look at).
    ``blame``, when given, counts each refusal against the term it was for (a returning
    shot is no term's fault)."""
    own = {normalize(target.target_object.tag)} if target.target_object is not None else set()
    # On-screen text is no detector label: the looking verifier reads it on the negatives.
    named = {t for t in excluded - own if not onscreen.is_text_tag(t)}
    # Object needles have the probe's pixel checks (label, instance) for their own object.
    setup = setup if target.target_object is None else None
    if probe is not None and target.target_object is None and not named:
        probe = None
    looked = frames is not None
    grey_shot = BLACK_AND_WHITE in excluded and looked
    colour_shot = IN_COLOUR in excluded and looked
    casts = sorted((t, colour_cast.family_of(t)) for t in excluded & colour_cast.CAST_WORDS
                   ) if looked else []
    walk = walking.WALK_TAG in excluded and looked
    close = closeup.CLOSE_UP in excluded
    if probe is None and setup is None and not grey_shot and not colour_shot and not casts \
            and not walk and not close:
        return None

    def _frames(scene: Scene) -> Sequence[Keyframe]:
        return frames(scene) if frames is not None else ()

    def refusing_term(scene: Scene) -> str | None:
        if grey_shot and not all(clearly_in_colour(k.image) for k in _frames(scene)):
            return BLACK_AND_WHITE  # a viewer could take it for the black-and-white scene
        if colour_shot and not all(colourless(k.image) for k in _frames(scene)):
            return IN_COLOUR  # some colour shows: it could be the scene in colour asked about
        for term, colour in casts:
            if any(colour_cast.looks_like(k.image, colour) for k in _frames(scene)):
                return term  # a viewer could take it for the mostly-one-colour scene
        if close and closeup.negative_refused(max(
                (t.score for t in tables.view(scene).tags if t.tag == closeup.FACE_TAG),
                default=None)):
            return closeup.CLOSE_UP  # a face near the camera: it could be the close-up
        if walk:
            frames = _frames(scene)
            if walking.may_walk(tables.view(scene).objects, [k.t_s for k in frames],
                                [k.image for k in frames]):
                return walking.WALK_TAG  # someone there may be walking, or cannot be followed
        if probe is None:
            return None
        refusal: Refusal | None = probe.evidence(scene, target, named=named, attire=attire)
        if refusal is None:
            return None
        rejected.append(RejectedNegative(target.target_id, refusal.sighting, refusal.check))
        # A person sighting by clothes ("person~black") is blamed on the word ("person").
        return refusal.sighting.label.split(SIGHTING_SEPARATOR)[0]

    def accept(scene: Scene) -> bool:
        if setup is not None and setup.same(target.scene, _frames(target.scene),
                                            scene, _frames(scene)):
            return False
        term = refusing_term(scene)
        if term is not None and blame is not None:
            blame[term] += 1
        return term is None

    return accept
