"""Our own narration for the synthetic programs, written as SRT sidecars.

Each scene gets 1-3 cues naming its setting (never its objects, so subtitles do not give
away object needles), timed strictly inside the scene with a margin on both sides of every
cut, so a cue never overlaps two scenes. The wording is drawn from a generator seeded by
(seed, program, episode); a few lines carry quotes, colons, dashes and non-Latin text on
purpose, to exercise the escaping of every later stage that draws or parses subtitles.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from needleforge.errors import StudioError
from needleforge.scenes.subtitles import Cue
from needleforge.studio.plan import VideoPlan

_OPENERS = (
    "We open on {setting}.",
    "Next: {setting}.",
    "Up close: {setting}.",
    "Our camera finds {setting}.",
)
_MIDDLES = (
    "Take a moment; it's quieter than it looks.",
    "Keep watching — the details matter.",
    "Notice the colours: they won't last.",
    'The narrator whispers, "almost there."',
    "Progress: 50% done, 50% to go.",
    "On y va — さあ、行こう。",
)
_CLOSERS = (
    "That's all for {setting}.",
    "We leave {setting} behind.",
    "And so, farewell to {setting}.",
)
#: Seconds kept free of cues after each cut and before the next one.
_MARGIN_S = 0.25
#: Scenes shorter than this get no narration.
_MIN_SCENE_S = 1.2


def narrate(plan: VideoPlan, *, seed: int) -> dict[int, tuple[Cue, ...]]:
    """The cues of every scene of ``plan``, keyed by scene index (empty for short scenes)."""
    rng = random.Random(f"needleforge-narration:{seed}:{plan.program}:{plan.episode}")
    cues: dict[int, tuple[Cue, ...]] = {}
    for scene in plan.scenes:
        start_s, end_s = plan.time_s(scene.start_frame), plan.time_s(scene.end_frame)
        lines = _lines(rng, end_s - start_s, scene.backdrop.setting)
        cues[scene.index] = _timed(lines, start_s, end_s)
    return cues


def _lines(rng: random.Random, duration_s: float, setting: str) -> list[str]:
    if duration_s < _MIN_SCENE_S:
        return []
    count = 1 if duration_s < 4 else 2 if duration_s < 8 else 3
    lines = [rng.choice(_OPENERS)]
    if count == 3:
        lines.append(rng.choice(_MIDDLES))
    if count >= 2:
        lines.append(rng.choice(_CLOSERS))
    return [line.format(setting=setting) for line in lines]


def _timed(lines: list[str], start_s: float, end_s: float) -> tuple[Cue, ...]:
    """Spread ``lines`` over equal slots of the scene, each inset by a margin."""
    if not lines:
        return ()
    slot = (end_s - start_s) / len(lines)
    margin = min(_MARGIN_S, slot / 4)
    cues = []
    for i, text in enumerate(lines):
        begin_ms = math.ceil((start_s + i * slot + margin) * 1000)
        end_ms = math.floor((start_s + (i + 1) * slot - margin) * 1000)
        cues.append(Cue(begin_ms / 1000, end_ms / 1000, text))
    return tuple(cues)


def srt_timestamp(seconds: float) -> str:
    """``HH:MM:SS,mmm`` for a non-negative time; raises :class:`StudioError` otherwise."""
    if not math.isfinite(seconds) or seconds < 0:
        raise StudioError(f"subtitle time {seconds!r} must be finite and >= 0")
    total_ms = round(seconds * 1000)
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{millis:03d}"


def format_srt(cues: list[Cue]) -> str:
    """SRT text: numbered blocks, ``start --> end`` lines, a blank line after each block."""
    blocks = []
    for number, cue in enumerate(cues, start=1):
        timing = f"{srt_timestamp(cue.start_s)} --> {srt_timestamp(cue.end_s)}"
        blocks.append(f"{number}\n{timing}\n{cue.text}\n")
    return "\n".join(blocks)


def write_srt(cues: list[Cue], *, path: Path) -> None:
    """Write ``cues`` as UTF-8 SRT with LF line ends (atomically, via a temporary file)."""
    tmp = path.with_name(f"{path.name}.partial")
    tmp.write_text(format_srt(cues), encoding="utf-8", newline="\n")
    tmp.replace(path)
