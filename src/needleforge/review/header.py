"""The top of a contact sheet: what is asked, about what, and what the verifiers said."""

from __future__ import annotations

from PIL import Image, ImageDraw

from needleforge.review import draw
from needleforge.review.items import ReviewItem
from needleforge.review.verdicts import FileVerdict

_OK: draw.RGB = (20, 120, 50)
_BAD: draw.RGB = (170, 40, 40)

Line = tuple[str, int, bool, draw.RGB]  # text, font size, bold, colour


def _facts(item: ReviewItem, key: str) -> str:
    q, m = item.question, item.montage
    n = item.needles
    return (f"question {q.question_id} · {q.needle_type} needle · bucket {m.bucket} · "
            f"{n} needle{'s' * (n > 1)} · montage {m.montage_id} ({m.duration_s:.1f} s, "
            f"{len(m.segments)} segments) · written by {q.backend} ({q.model_version}), "
            f"template {q.template_id} · verdict key {key}")


def _object_line(item: ReviewItem) -> str | None:
    track = item.target_object
    if track is None:
        return None
    a = track.attributes
    return (f"Target object: {track.tag} ({track.object_id}), “{track.referring_expression}”; "
            f"{a.colour}, {a.position}, size rank {a.size_rank}; tracked "
            f"{track.start_s:.2f}–{track.end_s:.2f} s of the source, "
            f"{100 * track.mean_area_frac:.0f} % of the frame on average")


def _verifier_lines(item: ReviewItem) -> list[Line]:
    if not item.verifications:
        return [("Verifier: not verified", 16, True, draw.MUTED)]
    return [(f"Verifier {v.verifier} ({v.model_version}): {'PASSED' if v.passed else 'FAILED'}"
             f" — {v.reason}", 16, True, _OK if v.passed else _BAD)
            for v in item.verifications]


def _human_line(verdict: FileVerdict | None) -> Line:
    if verdict is None or not verdict.judged:
        return ("Human verdict: not judged yet", 16, False, draw.MUTED)

    def yes(flag: bool | None) -> str:
        return "yes" if flag else "no"

    note = f" — {verdict.note}" if verdict.note.strip() else ""
    return (f"Human verdict: {'VALID' if verdict.valid else 'INVALID'} (spans right: "
            f"{yes(verdict.spans_right)}, negatives clean: {yes(verdict.negatives_clean)})"
            f"{note}", 16, True, _OK if verdict.valid else _BAD)


def header(item: ReviewItem, width: int, *, key: str,
           verdict: FileVerdict | None = None) -> Image.Image:
    """The header block of ``item``'s sheet, ``width`` pixels wide."""
    q = item.question
    lines: list[Line] = [
        (_facts(item, key), 14, False, draw.MUTED),
        (f"Q: {q.text}", 26, True, draw.INK),
        (f"Description: {q.description}", 19, False, draw.INK),
    ]
    obj = _object_line(item)
    if obj is not None:
        lines.append((obj, 16, False, draw.INK))
    lines += _verifier_lines(item)
    lines.append(_human_line(verdict))
    margin = 16
    laid = []
    for text, size, bold, colour in lines:
        face = draw.font(size, bold=bold)
        laid.append((draw.wrap(text, face, width - 2 * margin), face, colour))
    height = 12 + sum(draw.line_height(face) * len(parts) + 6 for parts, face, _ in laid)
    block = Image.new("RGB", (width, height), draw.PAPER)
    canvas = ImageDraw.Draw(block)
    y = 10
    for parts, face, colour in laid:
        y = draw.text_block(canvas, (margin, y), parts, face, fill=colour) + 6
    return block
