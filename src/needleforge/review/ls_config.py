"""What a Label Studio project for question review holds: its labeling config and its tasks.

One task per question: the rendered montage video, the question text and description, and a
prediction of timeline labels the annotator starts from: an ``answer`` region per answer span
and a ``negative`` region per other segment (the negatives to check). The annotator corrects
the ``answer`` regions if needed and picks one verdict (:data:`CHOICES`), with an optional
note.

Times: Label Studio's timeline counts frames from 1 at the video's frame rate (the task's
``fps``, the render profile's). A span ``[start_s, end_s)`` is frames
``round(start_s·fps) + 1 … round(end_s·fps)`` and back, exactly, for spans on frame bounds
(every montage span is: the render cuts on whole seconds).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from needleforge.records import Montage, Question
from needleforge.records.human import LABEL_STUDIO_CHOICES
from needleforge.review.items import ReviewItem

#: The verdict choices, in the order the labeling screen shows them.
CHOICES = LABEL_STUDIO_CHOICES
ANSWER = "answer"
NEGATIVE = "negative"
SPANS, VERDICT, NOTE, VIDEO = "spans", "verdict", "note", "video"
MODEL_VERSION = "needleforge"

LABEL_CONFIG = f"""<View>
  <Header value="$question"/>
  <Text name="description" value="$description"/>
  <Video name="{VIDEO}" value="$video" frameRate="$fps" timelineHeight="200"/>
  <TimelineLabels name="{SPANS}" toName="{VIDEO}">
    <Label value="{ANSWER}" background="#2ca02c"/>
    <Label value="{NEGATIVE}" background="#7f7f7f"/>
  </TimelineLabels>
  <Header value="Is the question right? (answer: where the target is; negative: must not show it)"/>
  <Choices name="{VERDICT}" toName="{VIDEO}" choice="single" required="true">
{chr(10).join(f'    <Choice value="{c}"/>' for c in CHOICES)}
  </Choices>
  <TextArea name="{NOTE}" toName="{VIDEO}" placeholder="note (optional)" maxSubmissions="1"/>
</View>
"""


#: The attributes that decide what a labeling config shows and what an annotation stores.
_MEANINGFUL = frozenset({"name", "toName", "value", "choice", "required", "frameRate"})


def _signature(xml: str) -> set[str]:
    """Every element of a labeling config that carries meaning, as its path,
    ``<View> > <Choices name="verdict" …> > <Choice value="valid">``, with only the attributes
    that decide what is shown and stored (:data:`_MEANINGFUL`). Looks do not count (colours,
    placeholders, the timeline's height, a fixed heading's wording), so a needleforge release
    that restyles the config still reads the projects an earlier one made."""
    root = ET.fromstring(xml)
    out: set[str] = set()

    def walk(node: ET.Element, prefix: str) -> None:
        if node.tag == "Header" and not node.attrib.get("value", "").startswith("$"):
            return  # a fixed heading: wording only
        # no square brackets: the CLI prints errors through rich, which reads them as markup
        attrs = " ".join(f'{k}="{v}"' for k, v in sorted(node.attrib.items())
                         if k in _MEANINGFUL)
        tag = f"<{node.tag} {attrs}>" if attrs else f"<{node.tag}>"
        here = f"{prefix} > {tag}" if prefix else tag
        out.add(here)
        for child in node:
            walk(child, here)

    walk(root, "")
    return out


def config_differences(server_config: str, ours: str = LABEL_CONFIG) -> list[str]:
    """What differs between the project's labeling config and ours, one line per element
    (empty when they agree; whitespace and attribute order do not count)."""
    try:
        theirs = _signature(server_config)
    except ET.ParseError as err:
        return [f"the project's labeling config is not XML ({err})"]
    mine = _signature(ours)
    return ([f"missing from the project: {e}" for e in sorted(mine - theirs)]
            + [f"only in the project: {e}" for e in sorted(theirs - mine)])


def to_frames(span: tuple[float, float], fps: float) -> tuple[int, int]:
    """A montage span in seconds as Label Studio's 1-based inclusive frame range."""
    start_s, end_s = span
    return round(start_s * fps) + 1, max(round(end_s * fps), round(start_s * fps) + 1)


def to_seconds(frames: tuple[float, float], fps: float) -> tuple[float, float]:
    """The inverse of :func:`to_frames`, rounded to the microsecond."""
    start, end = frames
    return round((start - 1) / fps, 6), round(end / fps, 6)


def spans_of(segments: Iterable[Any]) -> list[tuple[float, float]]:
    return [(s.montage_start_s, s.montage_end_s) for s in segments]


def _region(region_id: str, label: str, span: tuple[float, float], fps: float) -> dict[str, Any]:
    start, end = to_frames(span, fps)
    return {"id": region_id, "from_name": SPANS, "to_name": VIDEO, "type": "timelinelabels",
            "value": {"ranges": [{"start": start, "end": end}], "timelinelabels": [label]}}


def prediction_result(item: ReviewItem, fps: float) -> list[dict[str, Any]]:
    """The pre-filled regions: one ``negative`` per other segment, then one ``answer`` per
    target span (ids ``n1…``, ``a1…``). Answers come last because the timeline lists the
    last region on top: the answer row is in view even when the negatives overflow it."""
    return ([_region(f"n{i}", NEGATIVE, s, fps)
             for i, s in enumerate(spans_of(item.negatives), start=1)]
            + [_region(f"a{i}", ANSWER, s, fps)
               for i, s in enumerate(spans_of(item.targets), start=1)])


def task_payload(item: ReviewItem, *, key: str, video_url: str, fps: float) -> dict[str, Any]:
    """The import body of one question's task: data (read by the config and by the pull)
    and the prediction."""
    question: Question = item.question
    montage: Montage = item.montage
    data = {
        VIDEO: video_url, "fps": fps, "question": question.text,
        "description": f"target ({question.needle_type}): {question.description}",
        "nf_key": key, "nf_question_id": question.question_id,
        "nf_montage_id": montage.montage_id, "nf_bucket": montage.bucket,
        "nf_answer_spans": [list(s) for s in spans_of(item.targets)],
    }
    return {"data": data,
            "predictions": [{"model_version": MODEL_VERSION,
                             "result": prediction_result(item, fps)}]}


def answer_ranges(result: Sequence[Mapping[str, Any]], fps: float) -> list[tuple[float, float]]:
    """The ``answer`` spans of an annotation's result, in seconds, sorted."""
    spans: list[tuple[float, float]] = []
    for region in result:
        value = region.get("value") or {}
        if region.get("from_name") != SPANS or ANSWER not in value.get("timelinelabels", []):
            continue
        for r in value.get("ranges", []):
            spans.append(to_seconds((float(r["start"]), float(r["end"])), fps))
    return sorted(spans)


def chosen(result: Sequence[Mapping[str, Any]]) -> str | None:
    """The verdict choice of an annotation's result (None when none was picked)."""
    for region in result:
        if region.get("from_name") == VERDICT:
            picks = (region.get("value") or {}).get("choices") or []
            return str(picks[0]) if picks else None
    return None


def note(result: Sequence[Mapping[str, Any]]) -> str:
    """The free-text note of an annotation's result ("" when none)."""
    for region in result:
        if region.get("from_name") == NOTE:
            text = (region.get("value") or {}).get("text") or []
            return " ".join(str(t) for t in text).strip()
    return ""
