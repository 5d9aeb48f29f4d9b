"""Exports of a release for other evaluation tool kits (``exports/``).

- ``lmms_eval/<task>.yaml`` + ``lmms_eval/utils.py``: an lmms-eval task over the grounding
  questions of ``questions.jsonl`` (Recall@1x at tIoU 0.7 and 0.5), and ``<task>_vnbench.yaml``
  over the VNBench tries (circular accuracy). Run lmms-eval from the release folder with
  ``--include_path exports/lmms_eval --tasks <task>``.
- ``vlmevalkit.tsv``: one row per question (``index, question_id, video, video_path,
  duration, bucket, task, needle_type, n_needles, question, answer, candidates, try``); the
  answer is the spans as JSON for grounding, the letter for multiple choice.
- ``qvhighlights.jsonl``: grounding questions as moment-retrieval records (``qid, query, vid,
  duration, relevant_windows``).
- ``vnbench.json``: multiple-choice tries in VNBench's layout (``video, question, options, gt,
  gt_option, needle_time, length, type, try``); written only when there are any.
"""

from __future__ import annotations

import csv
import importlib.resources
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.release.files import write_json, write_jsonl
from needleforge.release.lmms_eval_utils import DEFAULT_POST_PROMPT

Record = Mapping[str, Any]
_LETTERS = "ABCD"
TSV_COLUMNS: tuple[str, ...] = (
    "index", "question_id", "video", "video_path", "duration", "bucket", "task", "needle_type",
    "n_needles", "question", "answer", "candidates", "try",
)


def task_name(release_name: str) -> str:
    """The lmms-eval task name of a release: ``needleforge_`` + the name in snake case."""
    return "needleforge_" + re.sub(r"[^a-z0-9]+", "_", release_name.lower()).strip("_")


def _q(value: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def _task_yaml(task: str, *, hooks: str, max_new_tokens: int,
               metrics: Sequence[tuple[str, str]], extra: Sequence[str]) -> list[str]:
    """The lines an lmms-eval task over ``questions.jsonl`` shares: dataset, generation,
    ``utils.py`` hooks named ``{hooks}process_docs`` etc. (``doc_to_visual`` is common),
    one ``metric_list`` entry per ``(metric, aggregation)`` pair in ``metrics``, then
    ``extra`` lines before ``metadata``."""
    return [
        f"task: {_q(task)}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        "    test: questions.jsonl",
        "test_split: test",
        "output_type: generate_until",
        f"process_docs: !function utils.{hooks}process_docs",
        "doc_to_visual: !function utils.doc_to_visual",
        f"doc_to_text: !function utils.{hooks}doc_to_text",
        f"doc_to_target: !function utils.{hooks}doc_to_target",
        "generation_kwargs:",
        f"  max_new_tokens: {max_new_tokens}",
        "  temperature: 0",
        "  do_sample: false",
        f"process_results: !function utils.{hooks}process_results",
        "metric_list:",
        *[line for metric, aggregation in metrics for line in (
            f"  - metric: {metric}",
            f"    aggregation: !function utils.{aggregation}",
            "    higher_is_better: true")],
        *extra,
        "metadata:",
        "  version: 1.0",
    ]


def lmms_eval_yaml(release_name: str) -> str:
    """The lmms-eval task config; ``!function`` tags point at the shipped ``utils.py``."""
    task = task_name(release_name)
    return "\n".join([
        f"# lmms-eval task for the needleforge release {release_name}.",
        "# Run from the release folder (data_files is relative to the working directory):",
        f"#   lmms-eval --include_path exports/lmms_eval --tasks {task} ...",
        *_task_yaml(task, hooks="", max_new_tokens=256,
                    metrics=[(f"recall_1x_tiou_{m}", "aggregate_recall") for m in ("0.7", "0.5")],
                    extra=["lmms_eval_specific_kwargs:", "  default:", '    pre_prompt: ""',
                           f"    post_prompt: {_q(DEFAULT_POST_PROMPT)}"]),
        f"  release: {_q(release_name)}",
        "",
    ])


def lmms_eval_vnbench_yaml(release_name: str) -> str:
    """The lmms-eval task over the VNBench tries (circular accuracy, as VNBench scores)."""
    task = task_name(release_name) + "_vnbench"
    return "\n".join([
        f"# lmms-eval task for the VNBench tries of the needleforge release {release_name}.",
        f"#   lmms-eval --include_path exports/lmms_eval --tasks {task} ...",
        *_task_yaml(task, hooks="vnbench_", max_new_tokens=16,
                    metrics=[("circular_accuracy", "aggregate_circular")], extra=[]),
        f"  release: {_q(release_name)}",
        "",
    ])


def lmms_eval_utils_source() -> str:
    """The text of the hooks module shipped as ``exports/lmms_eval/utils.py``."""
    return importlib.resources.files("needleforge.release").joinpath(
        "lmms_eval_utils.py").read_text(encoding="utf-8")


def _letter(record: Record) -> str:
    return _LETTERS[int(record["answer_index"])]


def vlmevalkit_tsv(records: Sequence[Record]) -> str:
    """Every question as one TSV row (columns :data:`TSV_COLUMNS`), with a header line."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(TSV_COLUMNS)
    for i, r in enumerate(records):
        grounding = "answer_spans" in r
        writer.writerow([
            i, r["question_id"], Path(r["video"]).stem, r["video"], r["duration_s"], r["bucket"],
            r["task"], r["needle_type"], r["n_needles"], r["question"],
            json.dumps(r["answer_spans"]) if grounding else _letter(r),
            "" if grounding else json.dumps(list(r["options"]), ensure_ascii=False),
            "" if grounding else r["try"],
        ])
    return buf.getvalue()


def qvhighlights_records(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Grounding questions as QVHighlights moment-retrieval records (``qid`` is the id)."""
    return [{"qid": r["question_id"], "query": r["question"], "vid": Path(r["video"]).stem,
             "duration": r["duration_s"], "relevant_windows": r["answer_spans"]}
            for r in records if "answer_spans" in r]


def vnbench_records(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Multiple-choice tries in VNBench's annotation layout (one entry per try)."""
    return [{"question_id": r["question_id"], "video": r["video"], "question": r["question"],
             "options": list(r["options"]), "gt": r["options"][int(r["answer_index"])],
             "gt_option": _letter(r),
             "needle_time": [span[0] for span in r.get("needle_spans", [])],
             "length": r["duration_s"], "type": r["task"], "try": r["try"]}
            for r in records if "options" in r]


def write_exports(root: Path, records: Sequence[Record], *, release_name: str) -> list[str]:
    """Write every export under ``root / "exports"``; returns the paths written (relative)."""
    out = root / "exports"
    (out / "lmms_eval").mkdir(parents=True)
    written = []
    if any("answer_spans" in r for r in records):
        yaml_rel = f"exports/lmms_eval/{task_name(release_name)}.yaml"
        (root / yaml_rel).write_text(lmms_eval_yaml(release_name), encoding="utf-8")
        write_jsonl(out / "qvhighlights.jsonl", qvhighlights_records(records))
        written += [yaml_rel, "exports/qvhighlights.jsonl"]
    if any(r.get("family") == "vnbench" for r in records):
        yaml_rel = f"exports/lmms_eval/{task_name(release_name)}_vnbench.yaml"
        (root / yaml_rel).write_text(lmms_eval_vnbench_yaml(release_name), encoding="utf-8")
        written.append(yaml_rel)
    if written:
        (out / "lmms_eval" / "utils.py").write_text(lmms_eval_utils_source(), encoding="utf-8")
        written.append("exports/lmms_eval/utils.py")
    (out / "vlmevalkit.tsv").write_text(vlmevalkit_tsv(records), encoding="utf-8")
    written.append("exports/vlmevalkit.tsv")
    choices = vnbench_records(records)
    if choices:
        write_json(out / "vnbench.json", choices)
        written.append("exports/vnbench.json")
    return sorted(written)
