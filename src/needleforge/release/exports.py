"""Exports of a release for other evaluation tool kits (``exports/``), each in its consumer's
conventions, checked against the consumer's own code (``tests/release/test_consumers_*``):

- ``lmms_eval/<task>.yaml`` + ``lmms_eval/utils.py``: an lmms-eval task over the grounding
  questions of ``questions.jsonl`` (Recall@1x at tIoU 0.7 and 0.5 on exact seconds, the
  primary figures), ``<task>_second_set.yaml`` (the same on the NeMo paper's whole-second
  sets, named ``…_second_set``), and ``<task>_vnbench.yaml`` over the VNBench tries (circular
  accuracy and VNBench's overall). The data path is resolved by ``utils.py`` from the task
  file or ``$NEEDLEFORGE_RELEASE_DIR``, so
  ``lmms-eval --include_path <release>/exports/lmms_eval --tasks <task>`` runs from anywhere.
- ``vlmevalkit/``: a multiple-choice TSV, a grounding TSV and a drop-in dataset module
  (:mod:`needleforge.release.vlmevalkit`).
- ``qvhighlights.jsonl``: grounding questions as QVHighlights moment-retrieval records (``qid,
  query, vid, duration, relevant_windows``); saliency is not annotated.
- ``vnbench.json`` (+ ``vnbench_long.json``, ``vnbench_act.json``): VNBench tries in VideoNIAH's
  annotation layout (:mod:`needleforge.release.vnbench_files`); written only when there are any.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from needleforge.release.file_io import Record, write_jsonl
from needleforge.release.lmms_eval_utils import DEFAULT_POST_PROMPT
from needleforge.release.vlmevalkit import write_vlmevalkit
from needleforge.release.vnbench_files import write_vnbench_files


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
        "# The release's questions.jsonl, absolute, from $NEEDLEFORGE_RELEASE_DIR or two folders",
        "# above this file: utils.py computes it when lmms-eval resolves the tag (see there).",
        "dataset_kwargs:",
        "  data_files:",
        "    test: !function utils.QUESTIONS_FILE",
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


def lmms_eval_yaml(release_name: str, *, second_set: bool = False) -> str:
    """The lmms-eval task config; ``!function`` tags point at the shipped ``utils.py``.

    ``second_set``: the ``<task>_second_set`` task, scored on the NeMo paper's whole-second
    sets (the primary task measures tIoU on exact seconds).
    """
    task = task_name(release_name) + ("_second_set" if second_set else "")
    suffix = "_second_set" if second_set else ""
    about = ("tIoU on the NeMo paper's whole-second sets, beside the primary task"
             if second_set else "tIoU on exact seconds")
    return "\n".join([
        f"# lmms-eval task for the needleforge release {release_name} ({about}).",
        "# Runs from any directory; set NEEDLEFORGE_RELEASE_DIR when this folder is moved:",
        f"#   lmms-eval --include_path <release>/exports/lmms_eval --tasks {task} ...",
        *_task_yaml(task, hooks="second_set_" if second_set else "", max_new_tokens=256,
                    metrics=[(f"recall_1x_tiou_{m}{suffix}", "aggregate_recall")
                             for m in ("0.7", "0.5")],
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
        f"#   lmms-eval --include_path <release>/exports/lmms_eval --tasks {task} ...",
        *_task_yaml(task, hooks="vnbench_", max_new_tokens=16,
                    metrics=[("circular_accuracy", "aggregate_circular"),
                             ("vnbench_overall", "aggregate_vnbench_overall")], extra=[]),
        f"  release: {_q(release_name)}",
        "",
    ])


def lmms_eval_utils_source() -> str:
    """The text of the hooks module shipped as ``exports/lmms_eval/utils.py``."""
    return importlib.resources.files("needleforge.release").joinpath(
        "lmms_eval_utils.py").read_text(encoding="utf-8")


def qvhighlights_records(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Grounding questions as QVHighlights moment-retrieval records (``qid`` is the id)."""
    return [{"qid": r["question_id"], "query": r["question"], "vid": Path(r["video"]).stem,
             "duration": r["duration_s"], "relevant_windows": r["answer_spans"]}
            for r in records if "answer_spans" in r]


def write_exports(root: Path, records: Sequence[Record], *, release_name: str) -> list[str]:
    """Write every export under ``root / "exports"``; returns the paths written (relative).

    Raises:
        ReleaseError: VNBench tries that VideoNIAH's scripts would miscount (see
            :func:`needleforge.release.vnbench_files.check_vnbench_release`).
    """
    out = root / "exports"
    (out / "lmms_eval").mkdir(parents=True)
    written = []
    if any("answer_spans" in r for r in records):
        yaml_rel = f"exports/lmms_eval/{task_name(release_name)}.yaml"
        (root / yaml_rel).write_text(lmms_eval_yaml(release_name), encoding="utf-8")
        paper_rel = f"exports/lmms_eval/{task_name(release_name)}_second_set.yaml"
        (root / paper_rel).write_text(lmms_eval_yaml(release_name, second_set=True),
                                      encoding="utf-8")
        write_jsonl(out / "qvhighlights.jsonl", qvhighlights_records(records))
        written += [yaml_rel, paper_rel, "exports/qvhighlights.jsonl"]
    if any(r.get("family") == "vnbench" for r in records):
        yaml_rel = f"exports/lmms_eval/{task_name(release_name)}_vnbench.yaml"
        (root / yaml_rel).write_text(lmms_eval_vnbench_yaml(release_name), encoding="utf-8")
        written.append(yaml_rel)
    if written:
        (out / "lmms_eval" / "utils.py").write_text(lmms_eval_utils_source(), encoding="utf-8")
        written.append("exports/lmms_eval/utils.py")
    written += write_vlmevalkit(root, records)
    written += write_vnbench_files(root, records)
    return sorted(written)
