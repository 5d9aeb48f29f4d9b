"""Question writing and self-verification by a vision-language model, whatever carries the call.

:class:`ModelDescriber` and :class:`ModelVerifier` hold everything the ``openai_http`` and
``hf_vlm`` writers share: which keyframes a model sees, drawing the target object's box on
copies of them (visual prompting, seed 001 App. D.2), the prompts of
:mod:`~needleforge.backends.writer_prompts`, and turning answers into needles and verdicts.
A backend only supplies an :data:`Ask`: frames + prompt in, answer text out, raising
:class:`~needleforge.errors.BackendError` when the call fails.

Failure rules — a model that cannot be understood never produces a question or a pass:

* describer: an abstract label, missing keyframes, a failed call or an answer not in the
  required format each give a :class:`Skip` naming what happened;
* verifier: it passes only when the model says the description fits the target clip and none
  of the negatives; no negatives, missing keyframes, a failed call (after the transport's
  retries) or a malformed answer give a failed :class:`Verdict` saying which clip and why.

One give-up rule, so a model that never answers usably cannot finish a stage "successfully"
with nothing in it: when the first ``give_up_after`` calls of a describer or verifier all fail
the same way — the same transport error, the same HTTP status, or answers with no JSON object
to read (:data:`UNPARSEABLE`) — :class:`FailureStreak` stops the stage with
:class:`EndpointFailure`, naming the kind and the last failure (an answer cut to one line).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar

from needleforge.backends.base import Keyframe
from needleforge.backends.hf.vlm_prompts import draw_box
from needleforge.backends.writer_prompts import (
    AnswerFormatError,
    ClipKind,
    FitAnswer,
    UnparseableAnswer,
    choose_template,
    describe_prompt,
    parse_fit_answer,
    parse_writer_answer,
    snippet,
    verify_prompt,
)
from needleforge.backends.writing import (
    SceneView,
    Skip,
    TargetView,
    Verdict,
    VerifyRequest,
    WrittenNeedle,
)
from needleforge.errors import BackendError, NeedleforgeError
from needleforge.params import DEFAULT_ABSTRACT_LABELS
from needleforge.records import NeedleType, ObjectTrack
from needleforge.records.phrases import normalize

#: Shows frames (in time order) and a prompt to a model; returns its answer text.
#: Raises BackendError when the call fails (after any retries of its own).
Ask: TypeAlias = Callable[[Sequence[Keyframe], str], str]
#: How many scene tags and labels a scene prompt lists as hints.
_HINT_TAGS = 8
#: The failure kind of answers holding no JSON object to read (prose instead of the format).
UNPARSEABLE = "unparseable answers"
_T = TypeVar("_T")


class EndpointFailure(NeedleforgeError):
    """The first calls of a stage to a model all failed the same way.

    Deliberately not a :class:`BackendError`: the writers turn a BackendError into one
    target's skip or failed verdict, which is what let a dead server, or a model answering
    prose, finish a stage with zero questions and exit status 0.
    """


class FailureStreak:
    """Stops a stage whose first ``limit`` calls all failed the same way (``limit`` 0: never).

    "The same way" is the failure's kind (``HTTP 400``, ``ConnectError``, ``timeout``,
    :data:`UNPARSEABLE`), not its text, which may hold request ids. Once a call has worked
    (an answer in the format, even one breaking a content rule) the model is known to work,
    and later failures stay the targets' own (a skip or a failed verdict each): the work
    already done is not thrown away. Thread-safe.
    """

    def __init__(self, limit: int, *, who: str) -> None:
        """Raises: BackendError: a negative ``limit``."""
        if limit < 0:
            raise BackendError(f"give_up_after = {limit} must be >= 0 (0: never give up)")
        self.limit, self.who = limit, who
        self._lock = threading.Lock()
        self._worked = False
        self._kind: str | None = None
        self._count = 0

    def succeeded(self) -> None:
        """Note a call that worked: from now on nothing stops the stage."""
        with self._lock:
            self._worked = True

    def failed(self, kind: str, last: str) -> None:
        """Note a failed call of ``kind``; ``last`` says what happened, on one line.

        Raises:
            EndpointFailure: it is the ``limit``-th failure of one kind in a row and no call
                has worked yet; the message names the kind and repeats ``last``.
        """
        with self._lock:
            if self._worked or self.limit == 0:
                return
            self._count = self._count + 1 if kind == self._kind else 1
            self._kind = kind
            if self._count >= self.limit:
                raise EndpointFailure(
                    f"{self.who}: stopping: its first {self._count} calls all failed the same "
                    f"way ({kind}); the last: {last}")

    def call(self, ask: Ask, frames: Sequence[Keyframe], prompt: str,
             parse: Callable[[str], _T]) -> _T:
        """``parse(ask(frames, prompt))``, noting how the call went.

        Raises:
            BackendError, AnswerFormatError: as ``ask`` and ``parse`` do (the caller makes a
                skip or a failed verdict of them). EndpointFailure: as :meth:`failed`.
        """
        try:
            text = ask(frames, prompt)
        except BackendError as exc:
            kind = getattr(exc, "kind", None)
            self.failed(kind if isinstance(kind, str) and kind else "failed calls", str(exc))
            raise
        try:
            parsed = parse(text)
        except UnparseableAnswer as exc:
            said = str(exc)
            self.failed(UNPARSEABLE, said if "in the answer" in said
                        else f"{said} in the answer {snippet(text)}")
            raise
        except AnswerFormatError:
            self.succeeded()
            raise
        self.succeeded()
        return parsed


class NoFrames(ValueError):
    """There is nothing to show the model for a clip; the message says which and why."""


def even_pick(frames: Sequence[Keyframe], count: int) -> tuple[Keyframe, ...]:
    """Up to ``count`` of ``frames`` (sorted by time), spread evenly; one = the middle one."""
    ordered = sorted(frames, key=lambda k: k.t_s)
    if len(ordered) <= count:
        return tuple(ordered)
    if count == 1:
        return (ordered[len(ordered) // 2],)
    last = len(ordered) - 1
    return tuple(ordered[round(i * last / (count - 1))] for i in range(count))


def marked_frames(
    keyframes: Sequence[Keyframe], obj: ObjectTrack, *, count: int, max_gap_s: float
) -> tuple[Keyframe, ...]:
    """Up to ``count`` keyframes showing ``obj``, each a copy with its box drawn in red.

    A keyframe shows the object when one of its boxes lies within ``max_gap_s`` of it; that
    nearest box is the one drawn. Raises:
        NoFrames: when no keyframe lies that close to a box of the object.
    """
    usable: list[Keyframe] = []
    for frame in keyframes:
        nearest = min(obj.boxes, key=lambda b: (abs(b.t_s - frame.t_s), b.t_s))
        if abs(nearest.t_s - frame.t_s) <= max_gap_s:
            usable.append(Keyframe(frame.t_s, draw_box(frame.image, box=nearest.box)))
    if not usable:
        raise NoFrames(f"none of the {len(keyframes)} keyframes of scene {obj.scene_id} lies "
                       f"within {max_gap_s:g} s of a box of object {obj.object_id}")
    return even_pick(usable, count)


def plain_frames(view: SceneView | TargetView, *, count: int, what: str) -> tuple[Keyframe, ...]:
    """Up to ``count`` of the scene's keyframes, evenly spread. Raises NoFrames when none."""
    if not view.keyframes:
        raise NoFrames(f"{what} {view.scene.scene_id} has no keyframes to show the model")
    return even_pick(view.keyframes, count)


def _check_counts(max_frames: int, max_gap_s: float) -> None:
    if max_frames < 1:
        raise BackendError(f"max_frames = {max_frames} must be >= 1")
    if not max_gap_s >= 0:
        raise BackendError(f"max_gap_s = {max_gap_s} must be >= 0")


class ModelDescriber:
    """Writes needles by asking a model about the target's keyframes (see the module doc);
    ``give_up_after``: stop the stage when this many first calls fail alike (0: never).

    Raises:
        BackendError: ``max_frames < 1``, a negative ``max_gap_s`` or ``give_up_after``.
    """

    def __init__(
        self, ask: Ask, *, name: str, version: str, template_id: str, max_frames: int = 4,
        max_gap_s: float = 1.0, abstract_labels: Sequence[str] = DEFAULT_ABSTRACT_LABELS,
        seed: int = 0, give_up_after: int = 3,
    ) -> None:
        _check_counts(max_frames, max_gap_s)
        self._ask = ask
        self._streak = FailureStreak(give_up_after, who=name)
        self._seed = seed
        self._name, self._version, self._template_id = name, version, template_id
        self._max_frames, self._max_gap_s = max_frames, max_gap_s
        self._abstract = frozenset(normalize(label) for label in abstract_labels)

    @property
    def name(self) -> str:
        """Recorded as ``questions.backend``."""
        return self._name

    @property
    def version(self) -> str:
        """Model (or server + model) and :data:`~.writer_prompts.PROMPTS_VERSION`."""
        return self._version

    def write(self, view: TargetView, *, needle_type: NeedleType) -> WrittenNeedle | Skip:
        """The needle the model writes for ``view``, or a :class:`Skip` saying why not.

        Raises:
            ValueError: an object needle without a target object, or a scene needle with one.
        """
        if (needle_type == "object") != (view.target_object is not None):
            raise ValueError(f"needle_type {needle_type!r} does not fit view of "
                             f"{view.scene.scene_id} with target object {view.target_object!r}")
        obj = view.target_object
        if obj is not None and normalize(obj.tag) in self._abstract:
            return Skip(f"object {obj.object_id}: label {normalize(obj.tag)!r} is too abstract "
                        f"to ground")
        try:
            frames = (marked_frames(view.keyframes, obj, count=self._max_frames,
                                    max_gap_s=self._max_gap_s) if obj is not None
                      else plain_frames(view, count=self._max_frames, what="target scene"))
        except NoFrames as exc:
            return Skip(str(exc))
        if obj is not None:
            prompt = describe_prompt("object", n_images=len(frames), subtitles=view.subtitle_text,
                                     label=obj.tag, hint=obj.referring_expression)
        else:
            seen = view.as_scene_view()
            hints = tuple(dict.fromkeys([*seen.tag_names, *sorted(seen.labels)]))
            prompt = describe_prompt("scene", n_images=len(frames),
                                     subtitles=view.subtitle_text, tags=hints[:_HINT_TAGS])
        try:
            answer = self._streak.call(
                self._ask, frames, prompt,
                lambda text: parse_writer_answer(text, needle_type=needle_type))
        except BackendError as exc:
            return Skip(f"model call failed: {exc}")
        except AnswerFormatError as exc:
            return Skip(f"model answer not in the required format: {exc}")
        if answer.skip:
            return Skip(f"model skipped {view.target_id}: {answer.reason}")
        if needle_type == "object":
            # The model writes the object's description; the question comes from our own
            # templates (NeMo App. D.2), so questions vary by phrasing, never by model whim.
            tid, text = choose_template("object", key=view.target_id, seed=self._seed)
            return WrittenNeedle("object", answer.description,
                                 text.format(obj=answer.description),
                                 f"{self._template_id}+{tid}")
        return WrittenNeedle(needle_type, answer.description, answer.question, self._template_id)


class ModelVerifier:
    """Asks a model, clip by clip, whether a description fits (see the module doc).

    The target clip of an object needle is shown with the object's box drawn and the model is
    asked whether the description singles out that object; every negative clip is shown
    plain and asked whether some object (or, for scene needles, the clip) fits. The target is
    asked first and the negatives in montage order; judging stops at the first failure.
    ``give_up_after`` as for :class:`ModelDescriber`.

    Raises:
        BackendError: ``max_frames < 1``, a negative ``max_gap_s`` or ``give_up_after``.
    """

    def __init__(
        self, ask: Ask, *, name: str, version: str, max_frames: int = 4, max_gap_s: float = 1.0,
        give_up_after: int = 3,
    ) -> None:
        _check_counts(max_frames, max_gap_s)
        self._ask = ask
        self._streak = FailureStreak(give_up_after, who=name)
        self._name, self._version = name, version
        self._max_frames, self._max_gap_s = max_frames, max_gap_s

    @property
    def name(self) -> str:
        """Recorded as ``verifications.verifier``."""
        return self._name

    @property
    def version(self) -> str:
        """Model (or server + model) and :data:`~.writer_prompts.PROMPTS_VERSION`."""
        return self._version

    def verify(self, request: VerifyRequest) -> Verdict:
        """Pass only when the target fits and no negative does; every verdict says why."""
        if not request.negatives:
            return Verdict(False, "no negatives in the montage to check the description against")
        target = request.target
        obj = target.target_object
        where = f"target {target.target_id}"
        try:
            frames = (marked_frames(target.keyframes, obj, count=self._max_frames,
                                    max_gap_s=self._max_gap_s) if obj is not None
                      else plain_frames(target, count=self._max_frames, what="target scene"))
        except NoFrames as exc:
            return Verdict(False, f"cannot judge {where}: {exc}")
        judged = self._judge(frames, "marked" if obj is not None else "scene", request, where)
        if isinstance(judged, Verdict):
            return judged
        if not judged.fits:
            return Verdict(False, f"the description does not fit {where}: {judged.why}")
        target_why = judged.why
        kind: ClipKind = "object" if obj is not None else "scene"
        for negative in request.negatives:
            where = f"negative {negative.scene.scene_id}"
            try:
                frames = plain_frames(negative, count=self._max_frames, what="negative scene")
            except NoFrames as exc:
                return Verdict(False, f"cannot judge {where}: {exc}")
            judged = self._judge(frames, kind, request, where)
            if isinstance(judged, Verdict):
                return judged
            if judged.fits:
                return Verdict(False, f"ambiguous: the description also fits {where}: "
                                      f"{judged.why}")
        return Verdict(True, f"fits target {target.target_id} ({target_why}); none of the "
                             f"{len(request.negatives)} negatives fits")

    def _judge(
        self, frames: Sequence[Keyframe], kind: ClipKind, request: VerifyRequest, where: str
    ) -> FitAnswer | Verdict:
        """The model's answer about one clip, or the failed verdict its failure means."""
        prompt = verify_prompt(kind, n_images=len(frames), description=request.description)
        try:
            return self._streak.call(self._ask, frames, prompt, parse_fit_answer)
        except BackendError as exc:
            return Verdict(False, f"verifier call on {where} failed: {exc}")
        except AnswerFormatError as exc:
            return Verdict(False, f"verifier answer on {where} not in the required format: "
                                  f"{exc}")
