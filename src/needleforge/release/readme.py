"""The release's ``README.md``: a Hugging Face dataset card and how to run each consumer on it.

Why a card with ``configs``: ``datasets.load_dataset(<release folder>)`` (what the Hub does
with a pushed folder) otherwise infers splits from folder names, and ``exports/lmms_eval``
matches its ``*eval/`` pattern, giving a "test" split of YAML and Python files. The YAML
header names one Parquet file per family (``data/nemo.parquet``, ``data/vnbench.parquet``,
written here with the types of ``questions.parquet``), one config each, NeMo the default.

The body says, per consumer, which file to use and the command to run: needleforge's own
scorer, ``datasets``, VideoNIAH's scripts, VLMEvalKit, moment_detr's ``standalone_eval`` (with
the one-line guard it needs when a window-length range is empty) and lmms-eval. Same records
in, same bytes out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from needleforge.release.exports import task_name
from needleforge.release.file_io import Record, write_questions_parquet
from needleforge.release.vlmevalkit import MODULE_FILE
from needleforge.release.vnbench_files import FILES as VNBENCH_FILES
from needleforge.release.vnbench_files import OFFICIAL_TASKS

README = "README.md"
#: Family → its Parquet file (the config of the same name reads it).
FAMILY_FILES: Mapping[str, str] = {"nemo": "data/nemo.parquet",
                                   "vnbench": "data/vnbench.parquet"}
#: The line to add to moment_detr's ``eval_moment_retrieval`` (after ``get_data_by_range``).
QVH_GUARD = ('        if not _ground_truth: ret_metrics[name] = {"MR-mAP": defaultdict(lambda: '
             'float("nan")), "MR-R1": defaultdict(lambda: float("nan"))}; continue')


def card_header(families: Sequence[str], *, title: str) -> str:
    """The YAML front matter: licence note, name and one ``configs`` entry per family."""
    configs: list[dict[str, Any]] = []
    for i, family in enumerate(families):
        entry: dict[str, Any] = {"config_name": family, "data_files": [
            {"split": "test", "path": FAMILY_FILES[family]}]}
        if i == 0:
            entry["default"] = True
        configs.append(entry)
    header = {"pretty_name": title, "license": "other", "task_categories":
              ["video-text-to-text"], "tags": ["video", "needle-in-a-haystack", "benchmark"],
              "configs": configs}
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n"


def _vnbench_section() -> list[str]:
    names = " and ".join(f"`{Path(VNBENCH_FILES[s]).name}`" for s in ("long", "act"))
    return [
        "## VNBench (VideoNIAH's own scripts)", "",
        f"`exports/vnbench.json` holds the 9 official task types ({', '.join(OFFICIAL_TASKS)})"
        " in VNBench's annotation layout; Long and Act tries, when shipped, are in "
        f"{names}, in the same layout. Ids are `<sample>_<try>` (the sample in `sample_id`); "
        "`video` is relative to this folder. Run your model on each entry and write one "
        "result line per try with `question_id`, `type`, `gt` (= `gt_option`) and `pred`, "
        "then `python evaluation/eval.py --path results.jsonl`. For "
        "`llava_examples/evaluation_utils.py`, name the fields `video_path` (= `video`), "
        "`task_type` (= `type`), `gt` and `pred`, and give it `vnbench.json`'s results only "
        "(it sums every type named `ret*`, `ord*`, `cnt*`). `needleforge score` reports the "
        "same overall: the mean of the retrieval, ordering and counting means over the 9 "
        "official types.", ""]


def _vlmevalkit_section() -> list[str]:
    return [
        "## VLMEvalKit", "",
        "`exports/vlmevalkit/needleforge_mcq.tsv` (VNBench tries: `index`, `g_index` circular "
        "groups, `question`, `A`-`D`, `answer`, `category`) and `needleforge_grounding.tsv` "
        "have `video_path` relative to this folder. Copy "
        f"`{MODULE_FILE}` into `vlmeval/dataset/`, import its `NeedleforgeVideoMCQ` and "
        "`NeedleforgeVideoGrounding` in `vlmeval/dataset/__init__.py`, then:", "",
        "```json",
        '{"data": {"needleforge_video_mcq": {"class": "NeedleforgeVideoMCQ", "dataset": '
        '"needleforge_video_mcq", "nframe": 16, "release_dir": "/path/to/this/folder"}}}',
        "```", "",
        "(`python run.py --config that.json --model ...`). Scoring calls the needleforge "
        "scorer; without needleforge, `write_needleforge_predictions` in the module writes a "
        "file for `needleforge score`.", ""]


def _qvhighlights_section() -> list[str]:
    return [
        "## QVHighlights (moment_detr `standalone_eval`)", "",
        "`exports/qvhighlights.jsonl` holds the moment-retrieval ground truth (`qid`, `query`, "
        "`vid`, `duration`, `relevant_windows`). **Saliency is not annotated**: there are no "
        "`relevant_clip_ids` or `saliency_scores`, so drop `pred_saliency_scores` from a "
        "submission before running `standalone_eval/eval.py` (its highlight metrics raise "
        "`KeyError: 'relevant_clip_ids'`). Its window-length ranges (short 0-10 s, middle "
        "10-30 s, long 30-150 s) may hold no window here, where `compute_mr_ap` raises "
        "`TypeError`; add this line in `eval_moment_retrieval` right after "
        "`_submission, _ground_truth = get_data_by_range(...)`:", "",
        "```python", QVH_GUARD, "```", "",
        "```bash",
        "python standalone_eval/eval.py --submission_path submission.jsonl --gt_path "
        "exports/qvhighlights.jsonl --save_path metrics.json",
        "```", "",
        "`needleforge score --questions questions.jsonl --predictions submission.jsonl` reads "
        "a moment_detr submission as it is (`pred_relevant_windows`; other keys ignored) and "
        "reports R1@0.5/0.7 and mAP in moment_detr's conventions beside ours.", ""]


def readme_text(records: Sequence[Record], *, name: str, title: str) -> str:
    """The whole README (see the module docstring)."""
    families = [f for f in FAMILY_FILES if any(r["family"] == f for r in records)]
    tasks = [task_name(name) + suffix for family, suffix in (("nemo", ""), ("vnbench", "_vnbench"))
             if family in families]
    lines = [
        card_header(families, title=title), f"# {title}: {name}", "",
        "A needleforge benchmark release: statistics, sources and licences are in `card.md`; "
        "`manifest.json` lists every file's sha256.", "",
        "## Data", "",
        "```python", "from datasets import load_dataset",
        *(f'load_dataset("path/to/{name}", "{f}")  # {FAMILY_FILES[f]}' for f in families),
        f'load_dataset("parquet", data_files="path/to/{name}/{FAMILY_FILES[families[0]]}")',
        "```", "",
        "`questions.jsonl` / `questions.parquet` hold every question; `video` paths are "
        "relative to this folder.", "",
        "## needleforge", "", "```bash",
        "needleforge score --questions questions.jsonl --predictions predictions.jsonl", "```",
        "",
        "## lmms-eval", "", "```bash",
        f"lmms-eval --include_path path/to/{name}/exports/lmms_eval --tasks {','.join(tasks)} "
        "...", "```",
        "", "From any directory; if the task folder is moved, set `NEEDLEFORGE_RELEASE_DIR` to "
        "this folder.", ""]
    if "vnbench" in families:
        lines += _vnbench_section()
    lines += _vlmevalkit_section()
    if "nemo" in families:
        lines += _qvhighlights_section()
    return "\n".join(lines)


def write_readme(root: Path, records: Sequence[Record], *, name: str, title: str) -> list[str]:
    """Write ``README.md`` and the per-family Parquet files; returns the paths written."""
    written = []
    for family, rel in FAMILY_FILES.items():
        subset = [r for r in records if r["family"] == family]
        if subset:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            write_questions_parquet(root / rel, subset)
            written.append(rel)
    (root / README).write_text(readme_text(records, name=name, title=title), encoding="utf-8")
    return [README, *written]
