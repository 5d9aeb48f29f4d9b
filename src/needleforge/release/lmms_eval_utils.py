"""lmms-eval hooks for a needleforge grounding release (copied as ``exports/lmms_eval/utils.py``).

This file is shipped inside every release and imported by lmms-eval, not by needleforge, so it
imports nothing but the standard library. It scores Recall@1x the way the needleforge scorer
does (``docs/metrics.md``): spans are clipped to ``[0, duration_s]``; a question with ``x``
target needles keeps the first ``x`` predicted spans; a target is recalled when some kept span
has tIoU ``>=`` the threshold with it; the score is recalled targets / all targets (micro).
tIoU is measured on exact seconds (``[s, e]`` covers ``e - s`` seconds, as moment_detr
measures it): the primary figures of the ``<task>`` task, ``recall_1x_tiou_<m>``. The
``<task>_second_set`` task reports the NeMo paper's figure beside it,
``recall_1x_tiou_<m>_second_set``: a span is the inclusive whole-second set
``{floor(s), …, ceil(e)}``, which rounds every span outwards and so inflates the overlap of
short answer windows (a 2 s window shifted by half its length: 1/3 exact, 1/2 in seconds).
The response parser here reads the common forms (``[12, 17.5]``, ``12 - 17.5``, ``12s to 17s``,
``1:02 - 1:10``); the needleforge scorer (``needleforge score``) is the reference and reads more.

The release root is ``$NEEDLEFORGE_RELEASE_DIR`` when set, else two folders above this file
(``<release>/exports/lmms_eval/utils.py``), whatever directory lmms-eval runs from. The task
YAML names its data as ``!function utils.QUESTIONS_FILE``: lmms-eval resolves that tag when it
loads the task, by reading this module's attribute, which :func:`__getattr__` computes then
(no work at import): the absolute path of the root's ``questions.jsonl``, or a
``FileNotFoundError`` naming the path it looked for.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

RECALL_THRESHOLDS: tuple[float, ...] = (0.7, 0.5)
DEFAULT_POST_PROMPT = (
    "\nAnswer with the start and end time, in seconds, of every moment that matches, as a "
    "list of [start, end] pairs, for example [[12.0, 17.5]]."
)

_TIME = r"\d+:\d{1,2}(?::\d{1,2})?(?:\.\d+)?|\d+(?:\.\d+)?(?:\s*(?:seconds?|secs?|s)\b)?"
_SPAN_RE = re.compile(
    rf"[\[(]\s*(?P<a1>{_TIME})\s*,\s*(?P<a2>{_TIME})\s*[\])]"
    rf"|(?<![\d.:])(?P<b1>{_TIME})\s*(?:-|–|—|~|\bto\b|\buntil\b)\s*(?P<b2>{_TIME})",
    re.IGNORECASE,
)


QUESTIONS_NAME = "questions.jsonl"


def _release_dir() -> Path:
    env = os.environ.get("NEEDLEFORGE_RELEASE_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def questions_path() -> Path:
    """The release's ``questions.jsonl``, absolute.

    Raises:
        FileNotFoundError: it does not exist (the message names the path and the fix).
    """
    path = (_release_dir() / QUESTIONS_NAME).resolve()
    if not path.is_file():
        raise FileNotFoundError(
            f"needleforge lmms-eval task: {path} does not exist; set NEEDLEFORGE_RELEASE_DIR "
            "to the release folder (the one holding questions.jsonl), or keep this task in "
            "<release>/exports/lmms_eval")
    return path


def __getattr__(name: str) -> str:
    """``QUESTIONS_FILE``: :func:`questions_path` as text, computed when the YAML asks."""
    if name == "QUESTIONS_FILE":
        return str(questions_path())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def process_docs(dataset: Any) -> Any:
    """Keep the grounding questions (the release may also hold multiple-choice ones)."""
    return dataset.filter(lambda doc: doc.get("answer_spans") is not None)


def doc_to_visual(doc: dict[str, Any]) -> list[str]:
    """The montage video of a question, as an absolute path."""
    return [str(_release_dir() / doc["video"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
                ) -> str:
    """The prompt: pre-prompt, the question, the video length, the answer instructions."""
    kwargs = lmms_eval_specific_kwargs or {}
    pre = str(kwargs.get("pre_prompt", ""))
    post = str(kwargs.get("post_prompt", DEFAULT_POST_PROMPT))
    return f"{pre}{doc['question']}\nThe video lasts {float(doc['duration_s']):.1f} seconds.{post}"


def doc_to_target(doc: dict[str, Any]) -> str:
    """The ground truth as text (for logs): ``[[start, end], ...]``."""
    return str([[float(s), float(e)] for s, e in doc["answer_spans"]])


def _seconds(token: str) -> float:
    token = re.sub(r"\s*[a-z]+$", "", token.strip().lower())
    if ":" in token:
        total = 0.0
        for part in token.split(":"):
            total = total * 60 + float(part)
        return total
    return float(token)


def parse_spans(text: str) -> list[tuple[float, float]]:
    """Every ``start, end`` pair in a response, in text order; reversed pairs are dropped."""
    spans = []
    for match in _SPAN_RE.finditer(text):
        first, second = (match.group("a1"), match.group("a2")) if match.group("a1") \
            else (match.group("b1"), match.group("b2"))
        start, end = _seconds(first), _seconds(second)
        if start <= end:
            spans.append((start, end))
    return spans


def _interval(span: tuple[float, float], duration_s: float, *,
              second_set: bool = False) -> tuple[float, float]:
    """The time a span covers after clipping, as a half-open ``[start, stop)``: exact seconds,
    or (``second_set``) the whole seconds ``floor(s) .. ceil(e)``, i.e. ``[floor(s),
    ceil(e) + 1)``. A span wholly outside the video is empty."""
    start, end = span
    if start > duration_s or end < 0:
        return (0.0, 0.0)
    start, end = max(start, 0.0), min(end, duration_s)
    if second_set:
        return (float(math.floor(start)), float(math.ceil(end) + 1))
    return (start, end)


def tiou(a: tuple[float, float], b: tuple[float, float]) -> float:
    """tIoU of two half-open intervals ``[start, stop)`` (empty when stop <= start)."""
    size_a, size_b = max(a[1] - a[0], 0.0), max(b[1] - b[0], 0.0)
    inter = max(min(a[1], b[1]) - max(a[0], b[0]), 0.0)
    union = size_a + size_b - inter
    return inter / union if union > 0 else 0.0


def recalled_targets(doc: dict[str, Any], response: str, threshold: float, *,
                     second_set: bool = False) -> int:
    """How many of the question's targets the first ``x`` predicted spans recall (tIoU on
    exact seconds, or on whole-second sets)."""
    duration = float(doc["duration_s"])
    targets = [_interval((float(s), float(e)), duration, second_set=second_set)
               for s, e in doc["answer_spans"]]
    kept = [_interval(p, duration, second_set=second_set)
            for p in parse_spans(response)[: len(targets)]]
    return sum(any(tiou(t, p) >= threshold for p in kept) for t in targets)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, dict[str, Any]]:
    """Per-question counts for each Recall@1x metric on exact seconds (aggregated by
    :func:`aggregate_recall`)."""
    return _recall_items(doc, results, second_set=False)


def second_set_process_results(doc: dict[str, Any],
                               results: list[str]) -> dict[str, dict[str, Any]]:
    """The same counts on the NeMo paper's whole-second sets (the ``<task>_second_set``
    task), keyed ``recall_1x_tiou_<m>_second_set``."""
    return _recall_items(doc, results, second_set=True)


def _recall_items(doc: dict[str, Any], results: list[str], *,
                  second_set: bool) -> dict[str, dict[str, Any]]:
    response = results[0] if results else ""
    n_targets = len(doc["answer_spans"])
    suffix = "_second_set" if second_set else ""
    return {
        f"recall_1x_tiou_{m}{suffix}": {
            "question_id": doc["question_id"], "targets": n_targets,
            "recalled": recalled_targets(doc, response, m, second_set=second_set)}
        for m in RECALL_THRESHOLDS
    }


# The second-set task asks the same questions the same way; only its scoring differs.
second_set_process_docs = process_docs
second_set_doc_to_text = doc_to_text
second_set_doc_to_target = doc_to_target


def aggregate_recall(items: list[dict[str, Any]]) -> float:
    """Recall@1x over the targets of all questions (micro): recalled / targets, in percent."""
    targets = sum(int(i["targets"]) for i in items)
    return 100.0 * sum(int(i["recalled"]) for i in items) / targets if targets else 0.0


# --- VNBench multiple choice (the ``<task>_vnbench`` task) ---------------------------------
# Circular evaluation as in VNBench: a sample counts only when all 4 of its tries (option
# rotations) are answered with the right letter. ``vnbench_overall`` is VNBench's headline as
# its own evaluation computes it: the mean of the retrieval, ordering and counting means of
# the circular accuracy of its 9 official tasks (Long and Act tasks are left out of it).

VNBENCH_TASKS = ("ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1",
                 "ord_insert2", "cnt_edit1", "cnt_edit2", "cnt_insert1")

_LETTER_RE = re.compile(r"\b([ABCD])\b")
_CHOICE_PROMPT = "\nAnswer with the letter of the correct option only."


def vnbench_process_docs(dataset: Any) -> Any:
    """Keep the multiple-choice VNBench tries."""
    return dataset.filter(lambda doc: doc.get("options") is not None)


def vnbench_doc_to_text(doc: dict[str, Any],
                        lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The question followed by its options lettered A-D, then the answer instruction."""
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(doc["options"]))
    post = str(kwargs.get("post_prompt", _CHOICE_PROMPT))
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}\n{options}{post}"


def vnbench_doc_to_target(doc: dict[str, Any]) -> str:
    """The correct letter of this try."""
    return "ABCD"[int(doc["answer_index"])]


def parse_letter(text: str) -> str | None:
    """The first standalone option letter of a response (``B``, ``(B)``, ``B. Bob``)."""
    match = _LETTER_RE.search(text.strip().upper())
    return match.group(1) if match else None


def vnbench_process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Whether this try was answered right, keyed by its sample for the circular score."""
    letter = parse_letter(results[0] if results else "")
    item = {"question_id": doc["question_id"], "task": doc["task"],
            "correct": letter == vnbench_doc_to_target(doc)}
    return {"circular_accuracy": item, "vnbench_overall": item}


def aggregate_circular(items: list[dict[str, Any]]) -> float:
    """Percent of samples whose every try is correct."""
    samples: dict[str, bool] = {}
    for item in items:
        key = str(item["question_id"])
        samples[key] = samples.get(key, True) and bool(item["correct"])
    return 100.0 * sum(samples.values()) / len(samples) if samples else 0.0


def aggregate_vnbench_overall(items: list[dict[str, Any]]) -> float:
    """VNBench's overall score in percent: the mean of its 3 group means over the 9 tasks."""
    samples: dict[tuple[str, str], bool] = {}
    for item in items:
        if item["task"] in VNBENCH_TASKS:
            key = (str(item["task"]), str(item["question_id"]))
            samples[key] = samples.get(key, True) and bool(item["correct"])
    groups: dict[str, list[float]] = {}
    for task in VNBENCH_TASKS:
        kept = [ok for (t, _), ok in samples.items() if t == task]
        if kept:
            groups.setdefault(task[:3], []).append(sum(kept) / len(kept))
    means = [sum(v) / len(v) for v in groups.values()]
    return 100.0 * sum(means) / len(means) if means else 0.0
