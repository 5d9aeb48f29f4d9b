"""Exports: the lmms-eval task and its hooks, QVHighlights records, which files are written.

The consumers' own conventions are checked in ``test_consumers_*.py``.
"""

from __future__ import annotations

import importlib.util
import json
import py_compile
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from needleforge.evaluate import DEFAULT_RECALL_THRESHOLDS, parse_spans, recall_at_kx
from needleforge.release.exports import lmms_eval_yaml, task_name, write_exports
from tests.release.consumer_cases import vnbench_choice_records

GROUNDING: dict[str, Any] = {
    "question_id": "q1", "family": "nemo", "task": "object_grounding", "bucket": "short",
    "needle_type": "object", "n_needles": 2, "question": 'When is the "red\tcar" seen?',
    "video": "videos/m1.mp4", "duration_s": 40.0, "answer_spans": [[3.0, 8.0], [20.0, 24.5]],
}
CHOICES = vnbench_choice_records(samples_per_task=1, seed=3)


class _TaskLoader(yaml.SafeLoader):
    """A YAML loader that reads lmms-eval's ``!function module.name`` tags as strings."""


_TaskLoader.add_constructor("!function",
                            lambda loader, node: f"!function {loader.construct_scalar(node)}")


def _load_utils(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("nf_lmms_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exports")
    written = write_exports(root, [GROUNDING, *CHOICES], release_name="Demo-2026.1")
    assert written == ["exports/lmms_eval/needleforge_demo_2026_1.yaml",
                       "exports/lmms_eval/needleforge_demo_2026_1_second_set.yaml",
                       "exports/lmms_eval/needleforge_demo_2026_1_vnbench.yaml",
                       "exports/lmms_eval/utils.py", "exports/qvhighlights.jsonl",
                       "exports/vlmevalkit/needleforge_grounding.tsv",
                       "exports/vlmevalkit/needleforge_mcq.tsv",
                       "exports/vlmevalkit/needleforge_vlmevalkit.py",
                       "exports/vnbench.json", "exports/vnbench_act.json",
                       "exports/vnbench_long.json"]
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                  for r in [GROUNDING, *CHOICES]))
    return root


def test_lmms_eval_task_yaml_follows_the_task_format(exported: Path) -> None:
    text = (exported / "exports/lmms_eval/needleforge_demo_2026_1.yaml").read_text()
    task = yaml.load(text, Loader=_TaskLoader)  # a SafeLoader subclass
    assert task["task"] == task_name("Demo-2026.1") == "needleforge_demo_2026_1"
    assert task["dataset_path"] == "json"
    assert task["dataset_kwargs"] == {"data_files": {"test": "!function utils.QUESTIONS_FILE"}}
    assert task["test_split"] == "test" and task["output_type"] == "generate_until"
    for hook in ("process_docs", "doc_to_visual", "doc_to_text", "doc_to_target",
                 "process_results"):
        assert task[hook] == f"!function utils.{hook}"
    assert [m["metric"] for m in task["metric_list"]] == ["recall_1x_tiou_0.7",
                                                           "recall_1x_tiou_0.5"]
    assert all(m["aggregation"] == "!function utils.aggregate_recall" and m["higher_is_better"]
               for m in task["metric_list"])
    assert task["lmms_eval_specific_kwargs"]["default"]["pre_prompt"] == ""
    assert lmms_eval_yaml("Demo-2026.1") == text


def test_lmms_eval_utils_compiles_and_imports_only_the_standard_library(
    exported: Path, tmp_path: Path
) -> None:
    path = exported / "exports/lmms_eval/utils.py"
    py_compile.compile(str(path), cfile=str(tmp_path / "utils.pyc"), doraise=True)
    imports = [line.split()[1] for line in path.read_text().splitlines()
               if line.startswith(("import ", "from "))]
    assert all(name.split(".")[0] in sys.stdlib_module_names or name == "__future__"
               for name in imports), imports


def test_lmms_eval_hooks_score_like_the_needleforge_scorer(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    utils = _load_utils(exported / "exports/lmms_eval/utils.py")
    assert tuple(utils.RECALL_THRESHOLDS) == DEFAULT_RECALL_THRESHOLDS
    monkeypatch.setenv("NEEDLEFORGE_RELEASE_DIR", "/data/rel")
    assert utils.doc_to_visual(GROUNDING) == ["/data/rel/videos/m1.mp4"]
    prompt = utils.doc_to_text(GROUNDING, {"pre_prompt": "P: ", "post_prompt": " [s, e]"})
    assert prompt == 'P: When is the "red\tcar" seen?\nThe video lasts 40.0 seconds. [s, e]'
    assert utils.parse_spans("from 0:03 to 0:08, then [20, 24.5]; also 30s-28s") == [
        (3.0, 8.0), (20.0, 24.5)]
    targets = [tuple(span) for span in GROUNDING["answer_spans"]]
    responses = ["[[3, 8], [20, 24.5]]", "[2.6, 7.2] and 19 - 22", "[20, 25]", "nothing",
                 "[39.5, 45], [3, 8]"]
    for m in DEFAULT_RECALL_THRESHOLDS:
        items = [utils.process_results(GROUNDING, [r])[f"recall_1x_tiou_{m}"]
                 for r in responses]
        expected = [recall_at_kx(targets, parse_spans(r).spans, threshold=m, duration_s=40.0)
                    for r in responses]
        got = [i["recalled"] / i["targets"] for i in items]
        assert got == pytest.approx(expected), (m, got, expected)
        assert 0 < sum(expected) < len(expected)  # the cases tell hits from misses
        assert utils.aggregate_recall(items) == pytest.approx(100 * sum(expected) / 5)


def test_the_second_set_task_scores_like_the_scorer_on_whole_seconds(exported: Path) -> None:
    text = (exported / "exports/lmms_eval/needleforge_demo_2026_1_second_set.yaml").read_text()
    task = yaml.load(text, Loader=_TaskLoader)
    assert task["task"] == "needleforge_demo_2026_1_second_set"
    assert [m["metric"] for m in task["metric_list"]] == ["recall_1x_tiou_0.7_second_set",
                                                           "recall_1x_tiou_0.5_second_set"]
    assert task["process_results"] == "!function utils.second_set_process_results"
    assert lmms_eval_yaml("Demo-2026.1", second_set=True) == text
    utils = _load_utils(exported / "exports/lmms_eval/utils.py")
    for hook in ("process_docs", "doc_to_text", "doc_to_target", "process_results"):
        assert callable(getattr(utils, task[hook].split(".")[-1]))
    targets = [tuple(span) for span in GROUNDING["answer_spans"]]
    # [4, 8] against [3, 8]: 4/5 exact, 5/6 whole seconds; [21.5, 24] against [20, 24.5]:
    # 2.5/4.5 exact (a miss at 0.7), 4/5 whole seconds (a hit): the two tasks must differ
    responses = ["[4, 8], [21.5, 24]", "[3.5, 5] and 22 - 26", "nothing"]
    differ = False
    for m in DEFAULT_RECALL_THRESHOLDS:
        for response in responses:
            exact = utils.process_results(GROUNDING, [response])[f"recall_1x_tiou_{m}"]
            paper = utils.second_set_process_results(GROUNDING, [response])[
                f"recall_1x_tiou_{m}_second_set"]
            spans = parse_spans(response).spans
            for item, kind in ((exact, "continuous"), (paper, "second_set")):
                assert item["recalled"] / item["targets"] == pytest.approx(recall_at_kx(
                    targets, spans, threshold=m, duration_s=40.0, kind=kind))  # type: ignore[arg-type]
            differ |= exact["recalled"] != paper["recalled"]
    assert differ


def test_qvhighlights_records(exported: Path) -> None:
    lines = (exported / "exports/qvhighlights.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{
        "qid": "q1", "query": GROUNDING["question"], "vid": "m1", "duration": 40.0,
        "relevant_windows": [[3.0, 8.0], [20.0, 24.5]]}]


def test_grounding_only_release_has_no_vnbench_file(tmp_path: Path) -> None:
    written = write_exports(tmp_path, [GROUNDING], release_name="g")
    assert "exports/vnbench.json" not in written
    assert "exports/vlmevalkit/needleforge_mcq.tsv" not in written
    assert not (tmp_path / "exports/vnbench.json").exists()
