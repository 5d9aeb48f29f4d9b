"""Contact sheets: one PNG per question, from which a judge can tell whether it is valid.

A sheet shows, top to bottom: the question, its description and ids, the target object
(object questions), the verifier's verdicts and reasons (and the human verdict, when one is
given); a green section with a row of frames across every answer span, each labelled with
its montage and source time, the target object's box drawn in yellow; a red section with
frames spread across every negative segment, labelled with the scene and times. The
question is valid when the description fits the green frames and none of the red ones.

Frames are decoded by seeking (:class:`~needleforge.nemo.video_keyframes.VideoKeyframes`); a frame
that cannot be decoded (a vanished file) becomes a grey placeholder saying why, so the rest
of the sheet is still drawn, and is counted in the result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from needleforge.errors import MediaError, StoreError
from needleforge.media.outputs import sweep_scratch, write_bytes_atomic, writing
from needleforge.nemo.video_keyframes import VideoKeyframes
from needleforge.records import Scene, Segment, Video
from needleforge.review import draw
from needleforge.review.header import header
from needleforge.review.items import ReviewItem
from needleforge.review.verdicts import FileVerdict

THUMB = (240, 135)
GAP, GROUP_GAP, MARGIN = 8, 16, 16
COLUMNS = 6
#: Frames per negative: three (two negatives a row) while a montage has at most
#: :data:`FEW_NEGATIVES`, else two (three a row), so a long montage's sheet stays shorter.
NEGATIVE_FRAMES, MANY_NEGATIVE_FRAMES, FEW_NEGATIVES = 3, 2, 16
#: Wide enough for three negatives of two frames (and for two of three, or a row of six).
WIDTH = 2 * MARGIN + 3 * (2 * THUMB[0] + GAP) + 2 * GROUP_GAP
_DECODE_SIDE = 480  # decoded a little larger than the thumbnail, then downscaled smoothly


@dataclasses.dataclass(frozen=True, slots=True)
class Frame:
    """A frame shown on a sheet: source time ``t_s`` inside ``segment`` (the decoded frame's
    own time when one was decoded); ``image`` None with ``note`` saying why."""

    segment: Segment
    t_s: float
    image: np.ndarray | None
    note: str = ""

    @property
    def montage_t_s(self) -> float:
        return self.segment.montage_start_s + (self.t_s - self.segment.src_start_s)


def spread(segment: Segment, count: int) -> list[float]:
    """``count`` source times inside ``segment``: the middles of ``count`` equal parts."""
    step = segment.duration_s / count
    return [segment.src_start_s + (k + 0.5) * step for k in range(count)]


def target_frame_count(segment: Segment) -> int:
    """Frames across an answer span: one per 1.5 s, at least 3, at most a row."""
    return max(3, min(COLUMNS, math.ceil(segment.duration_s / 1.5)))


class SegmentFrames:
    """Decodes the frames of montage segments from the stored videos (see module docstring).

    Raises (from :meth:`__call__`):
        StoreError: a segment of a scene the store does not hold.
    """

    def __init__(self, videos: Mapping[str, Video], scenes: Mapping[str, Scene]) -> None:
        self._frames = VideoKeyframes(videos, per_scene=1, max_side=_DECODE_SIDE, max_cached=1)
        self._scenes = scenes
        self.missing = 0  # frames that could not be decoded, over all calls
        self.problems: dict[str, str] = {}  # video id -> the first decoding error

    def __call__(self, segment: Segment, count: int) -> list[Frame]:
        scene = self._scenes.get(segment.scene_id)
        if scene is None:
            raise StoreError(f"montage segment {segment.position} of {segment.video_id} names "
                             f"scene {segment.scene_id}, which the store does not hold")
        out = [self._one(segment, scene, t) for t in spread(segment, count)]
        self.missing += sum(1 for f in out if f.image is None)
        return out

    def _one(self, segment: Segment, scene: Scene, t_s: float) -> Frame:
        try:
            found = self._frames.frame_at(scene, t_s)
        except MediaError as err:
            self.problems.setdefault(segment.video_id, str(err))
            return Frame(segment, t_s, None, f"frame unavailable: {err}")
        if found is None:
            return Frame(segment, t_s, None, f"no frame decodes at {t_s:.2f} s")
        return Frame(segment, found.t_s, found.image)

    def close(self) -> None:
        self._frames.close()


def _cell(frame: Frame, lines: list[str], item: ReviewItem, *, boxed: bool) -> Image.Image:
    """One thumbnail with its caption (and the target box on answer frames)."""
    thumb = draw.thumbnail(frame.image, THUMB, note=frame.note)
    if boxed and item.target_object is not None and frame.image is not None:
        box = draw.box_at(item.target_object, frame.t_s)
        if box is None:
            lines = [*lines, "object not tracked here"]
        else:
            height, width = frame.image.shape[:2]
            draw.draw_box(thumb, (width, height), box)
    label = draw.caption(THUMB[0], lines, size=13, align="centre")
    cell = Image.new("RGB", (THUMB[0], THUMB[1] + label.height), draw.PAPER)
    cell.paste(thumb, (0, 0))
    cell.paste(label, (0, THUMB[1]))
    return cell


def _row(images: Sequence[Image.Image], gap: int) -> Image.Image:
    height = max(i.height for i in images)
    row = Image.new("RGB", (sum(i.width for i in images) + gap * (len(images) - 1), height),
                    draw.PAPER)
    x = 0
    for image in images:
        row.paste(image, (x, 0))
        x += image.width + gap
    return row


def _stack(blocks: Sequence[Image.Image], *, gap: int = 6, indent: int = MARGIN) -> Image.Image:
    sheet = Image.new("RGB", (WIDTH, sum(b.height for b in blocks) + gap * (len(blocks) + 1)),
                      draw.PAPER)
    y = gap
    for block in blocks:
        sheet.paste(block, (0 if block.width == WIDTH else indent, y))
        y += block.height + gap
    return sheet


def _span(segment: Segment) -> str:
    # the scene id, printed beside it, names the source video
    return (f"montage {segment.montage_start_s:.2f}–{segment.montage_end_s:.2f} s · source "
            f"{segment.src_start_s:.2f}–{segment.src_end_s:.2f} s")


def _zoom(frames: Sequence[Frame], item: ReviewItem) -> Image.Image | None:
    """The target object cut out of the middle answer frame that shows it, enlarged."""
    if item.target_object is None:
        return None
    boxed = [(f.image, f.t_s, box) for f in frames if f.image is not None
             and (box := draw.box_at(item.target_object, f.t_s)) is not None]
    if not boxed:
        return None
    image, t_s, box = boxed[len(boxed) // 2]
    thumb = draw.thumbnail(draw.crop_box(image, box), THUMB)
    label = draw.caption(THUMB[0], ["target object, enlarged", f"source {t_s:.2f} s"],
                         size=13, align="centre", fill=draw.TARGET)
    cell = Image.new("RGB", (THUMB[0], THUMB[1] + label.height), draw.PAPER)
    cell.paste(thumb, (0, 0))
    cell.paste(label, (0, THUMB[1]))
    return cell


def _answer_blocks(item: ReviewItem, frames: SegmentFrames) -> list[Image.Image]:
    n = item.needles
    boxed = " — target object boxed in yellow" if item.target_object is not None else ""
    blocks = [draw.band(WIDTH, f"ANSWER: {n} span{'s' * (n > 1)}. The description must fit "
                        f"these frames{boxed}", draw.TARGET)]
    inner = WIDTH - 2 * MARGIN
    # an object question keeps the row's last place for the enlarged object
    most = COLUMNS - 1 if item.target_object is not None else COLUMNS
    for k, segment in enumerate(item.targets, start=1):
        blocks.append(draw.caption(inner, [f"Answer span {k} of {n} · {_span(segment)} · scene "
                                           f"{segment.scene_id}"], size=15, fill=draw.TARGET))
        shown = frames(segment, min(most, target_frame_count(segment)))
        cells = [_cell(f, [f"montage {f.montage_t_s:.2f} s", f"source {f.t_s:.2f} s"], item,
                       boxed=True) for f in shown]
        zoom = _zoom(shown, item)
        blocks.append(_row([*cells, zoom] if zoom is not None else cells, GAP))
    return blocks


def _negative_blocks(item: ReviewItem, frames: SegmentFrames,
                     per_negative: int) -> list[Image.Image]:
    n = len(item.negatives)
    rule = ("The target object must appear in NONE of these frames"
            if item.target_object is not None else "The description must fit NONE of these frames")
    blocks = [draw.band(WIDTH, f"NEGATIVES: {n} segment{'s' * (n != 1)}. {rule}",
                        draw.NEGATIVE)]
    group_width = per_negative * THUMB[0] + (per_negative - 1) * GAP
    groups = []
    for k, segment in enumerate(item.negatives, start=1):
        other = (f" (needle of another question: {segment.target_id})"
                 if segment.role == "target" else "")
        head = draw.caption(group_width, [f"Negative {k} of {n}{other} · scene "
                                          f"{segment.scene_id}", _span(segment)],
                            size=13, fill=draw.NEGATIVE)
        cells = [_cell(f, [f"montage {f.montage_t_s:.2f} s · source {f.t_s:.2f} s"], item,
                       boxed=False) for f in frames(segment, per_negative)]
        row = _row(cells, GAP)
        group = Image.new("RGB", (group_width, head.height + row.height), draw.PAPER)
        group.paste(head, (0, 0))
        group.paste(row, (0, head.height))
        groups.append(group)
    per_row = max(1, (WIDTH - 2 * MARGIN + GROUP_GAP) // (group_width + GROUP_GAP))
    blocks += [_row(groups[i:i + per_row], GROUP_GAP) for i in range(0, len(groups), per_row)]
    if not groups:
        blocks.append(draw.caption(WIDTH - 2 * MARGIN, ["(this montage has no negatives)"]))
    return blocks


def render_sheet(item: ReviewItem, frames: SegmentFrames, *, key: str,
                 verdict: FileVerdict | None = None,
                 per_negative: int | None = None) -> Image.Image:
    """The contact sheet of ``item`` (see the module docstring); ``per_negative`` frames
    per negative segment (default: :data:`NEGATIVE_FRAMES`, or
    :data:`MANY_NEGATIVE_FRAMES` past :data:`FEW_NEGATIVES` negatives).

    Raises:
        StoreError: a segment names a scene the store does not hold.
    """
    blocks = [header(item, WIDTH, key=key, verdict=verdict)]
    blocks += _answer_blocks(item, frames)
    if per_negative is None:
        many = len(item.negatives) > FEW_NEGATIVES
        per_negative = MANY_NEGATIVE_FRAMES if many else NEGATIVE_FRAMES
    blocks += _negative_blocks(item, frames, per_negative)
    sheet = _stack(blocks)
    ImageDraw.Draw(sheet).rectangle((0, 0, sheet.width - 1, sheet.height - 1),
                                    outline=(200, 200, 200))
    return sheet


def sheet_name(question_id: str) -> str:
    """The file name of a question's sheet: its id when that is a safe file name."""
    safe = all(c.isascii() and (c.isalnum() or c in "-_.") for c in question_id)
    if safe and not question_id.startswith("."):
        return f"{question_id}.png"
    return f"q-{hashlib.sha256(question_id.encode('utf-8')).hexdigest()[:16]}.png"


def write_sheet(path: Path, image: Image.Image) -> Path:
    """Encode ``image`` as PNG and publish it at ``path`` atomically.

    Raises:
        OutputError: ``path``'s folder cannot be written.
    """
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return write_bytes_atomic(path, buffer.getvalue(), what="contact sheet")


def prepare_out_dir(out_dir: Path) -> None:
    """Create ``out_dir`` and drop scratch files a killed earlier run left there.

    Raises:
        OutputError: the folder cannot be created or written.
    """
    with writing(out_dir, what="review folder"):
        out_dir.mkdir(parents=True, exist_ok=True)
        sweep_scratch(out_dir)
