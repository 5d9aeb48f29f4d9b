"""The looking verifier's text checks: a quoted on-screen text read again on the target's
frames the writer did not use, and negatives on which the quote can be read
(:mod:`needleforge.scenes.onscreen`; split from
:mod:`needleforge.backends.embedded.verifier`, which calls them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded import confirm as c
from needleforge.backends.embedded.ocr import EmbeddedTextReader
from needleforge.backends.writing import SceneView
from needleforge.scenes import onscreen

#: Frames of a scene the text rules read (spread over the frames given): OCR costs ~0.2 s
#: a frame, and a negative serves many montages (readings are cached per frame).
TEXT_FRAMES = 3


class TextEyes:
    """The OCR reader of the text rules, built on first use, its readings cached per frame
    (a negative serves many montages; the same frame is read once)."""

    def __init__(self, *, models_dir: Path | str | None, num_threads: int, cache: int) -> None:
        self._models_dir, self._threads, self._cache = models_dir, num_threads, cache
        self._reader: EmbeddedTextReader | None = None
        self._read: dict[tuple[str, float], list[tuple[str, float]]] = {}

    def lines(self, scene_id: str, frame: Keyframe) -> list[tuple[str, float]]:
        """``(line, confidence)`` the reader gives for ``frame`` (confidence >= 0.5)."""
        key = (scene_id, frame.t_s)
        if key not in self._read:
            if self._reader is None:
                self._reader = EmbeddedTextReader(models_dir=self._models_dir,
                                                  num_threads=self._threads)
            if len(self._read) >= self._cache:
                self._read.pop(next(iter(self._read)))
            self._read[key] = self._reader.read_scored(frame.image)
        return self._read[key]

    def reread(self, quote: str, scene_id: str, frames: Sequence[Keyframe]) -> c.Confirmation:
        """``reread-text``: the quote is read again, legibly
        (:func:`needleforge.scenes.onscreen.legible`), on at least one of up to
        :data:`TEXT_FRAMES` frames the writer did not use."""
        looked = _spread(frames, TEXT_FRAMES)
        held = [(k, line) for k in looked for line, score in self.lines(scene_id, k)
                if onscreen.legible(line, score) and onscreen.shows(line, quote)]
        seen = sorted({line for k in looked for line, _ in self.lines(scene_id, k)})
        times = tuple(k.t_s for k in looked)
        scores = tuple(float(any(k is f for f, _ in held)) for k in looked)
        if held:
            return c.Confirmation("confirmed", "reread-text", quote, times, scores,
                                  f"{quote!r} read again as {held[0][1]!r} on "
                                  f"{len({id(k) for k, _ in held})} of {len(looked)} frames")
        return c.Confirmation("refused", "reread-text", quote, times, scores,
                              f"{quote!r} not read legibly on {len(looked)} frames the writer "
                              f"did not use (read: {seen or 'nothing'})")

    def negative_refusal(self, quote: str, negative: SceneView) -> str | None:
        """``negative-text``: a negative on one of whose frames (up to :data:`TEXT_FRAMES`)
        the reader sees the quote, at any confidence it reports: a viewer could point there
        too. Unreadable (no frames) is a refusal as well."""
        sid = negative.scene.scene_id
        if not negative.keyframes:
            return f"unconfirmed: negative {sid} has no frames to look at"
        for frame in _spread(negative.keyframes, TEXT_FRAMES):
            for line, score in self.lines(sid, frame):
                if onscreen.shows(line, quote):
                    return (f"refused by negative-text: negative {sid} shows {line!r} "
                            f"(confidence {score:.2f}) at t={frame.t_s:.2f} s, which reads "
                            f"{quote!r}")
        return None


def _spread(frames: Sequence[Keyframe], most: int) -> list[Keyframe]:
    """Up to ``most`` of ``frames``, spread evenly (centres of equal parts)."""
    if len(frames) <= most:
        return list(frames)
    return [frames[int((i + 0.5) * len(frames) / most)] for i in range(most)]
