"""The lmms-eval tasks find their data from any working directory, and the real package scores
them.

Reference: ``EvolvingLMMs-Lab/lmms-eval`` at commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3
and the 0.7.3 wheel: ``lmms_eval/utils.py`` ``load_yaml_config`` / ``import_function`` (a
``!function mod.name`` tag loads ``mod.py`` beside the YAML and takes ``getattr(mod, name)``;
relative ``data_files`` are resolved against the YAML folder only in versions after
0.7.2, else against the working directory), ``lmms_eval/api/task.py`` ``ConfigurableTask``.

The slow test needs lmms-eval without its CUDA stack; in the project venv:
``pip install --no-deps lmms-eval==0.7.3 loguru accelerate tenacity evaluate sacrebleu
portalocker lxml`` (plus ``datasets``, a dev dependency). It is skipped when that is missing.
"""

from __future__ import annotations

import importlib.util
import random
import shutil
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from needleforge.evaluate import Prediction, load_questions, score
from needleforge.params import VNBenchTask
from tests.release.consumer_cases import grounding_records, vnbench_choice_records, write_release

TASK = "needleforge_demo"


class _Loader(yaml.SafeLoader):
    """A YAML loader with lmms-eval's ``!function`` semantics, relative to the file's folder."""


def _import_function(loader: _Loader, node: yaml.Node) -> Any:
    module_name, name = str(loader.construct_scalar(node)).rsplit(".", 1)
    path = Path(loader.name).parent / f"{module_name}.py"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


_Loader.add_constructor("!function", _import_function)


def load_task(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        return yaml.load(fh, Loader=_Loader)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    records = grounding_records(6) + vnbench_choice_records(samples_per_task=2, seed=1)
    return write_release(tmp_path_factory.mktemp("lmms-release") / "demo", records)


def test_data_resolves_from_the_task_file_whatever_the_working_directory(
        release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEEDLEFORGE_RELEASE_DIR", raising=False)
    task = load_task(release / "exports/lmms_eval" / f"{TASK}.yaml")
    assert task["dataset_kwargs"]["data_files"] == {
        "test": str((release / "questions.jsonl").resolve())}


def test_a_moved_task_reads_the_release_dir_or_names_the_missing_file(
        release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    moved = tmp_path / "elsewhere" / "tasks"  # two folders below tmp_path, like exports/x
    shutil.copytree(release / "exports/lmms_eval", moved)
    monkeypatch.delenv("NEEDLEFORGE_RELEASE_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "questions.jsonl")):
        load_task(moved / f"{TASK}_vnbench.yaml")
    monkeypatch.setenv("NEEDLEFORGE_RELEASE_DIR", str(release))
    task = load_task(moved / f"{TASK}_vnbench.yaml")
    assert task["dataset_kwargs"]["data_files"]["test"] == str(release / "questions.jsonl")


def test_the_vnbench_task_reports_the_overall_needleforge_score_reports(release: Path) -> None:
    utils = _import_function_from(release / "exports/lmms_eval/utils.py")
    assert get_args(VNBenchTask) == utils.VNBENCH_TASKS  # the shipped copy of the 9 names
    docs = [q for q in load_questions(release / "questions.jsonl") if q.family == "vnbench"]
    rng = random.Random(3)
    letters = {q.key: rng.choice("ABCD") if rng.random() < 0.5 else "ABCD"[q.answer_index]
               for q in docs}
    items = [utils.vnbench_process_results({"question_id": q.question_id, "task": q.task,
                                            "answer_index": q.answer_index},
                                           [letters[q.key]])["vnbench_overall"] for q in docs]
    report = score(docs, [Prediction(question_id=k[0], try_index=k[1], response=v)
                          for k, v in letters.items()])
    assert report.vnbench is not None and 0 < report.vnbench.overall < 1
    assert utils.aggregate_vnbench_overall(items) == pytest.approx(100 * report.vnbench.overall)


def _import_function_from(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("nf_lmms_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _perfect(doc: dict[str, Any]) -> str:
    if doc.get("answer_spans") is not None:
        return ", ".join(f"[{s}, {e}]" for s, e in doc["answer_spans"])
    return "ABCD"[int(doc["answer_index"])]


@pytest.mark.slow
def test_real_lmms_eval_loads_and_scores_both_tasks(
        release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    tasks_module = pytest.importorskip("lmms_eval.tasks", exc_type=ImportError)
    monkeypatch.chdir(tmp_path)  # not the release folder
    monkeypatch.delenv("NEEDLEFORGE_RELEASE_DIR", raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    manager = tasks_module.TaskManager(include_path=str(release / "exports/lmms_eval"),
                                       include_defaults=False)
    loaded = manager.load_task_or_group([TASK, f"{TASK}_vnbench"])
    expected = {TASK: {"recall_1x_tiou_0.7": 100.0, "recall_1x_tiou_0.5": 100.0},
                f"{TASK}_vnbench": {"circular_accuracy": 100.0, "vnbench_overall": 100.0}}
    for name, task in loaded.items():
        docs = list(task.test_docs())
        assert docs, name
        items: dict[str, list[Any]] = {}
        for doc in docs:
            assert Path(task.doc_to_visual(doc)[0]).is_file()
            for metric, value in task.process_results(doc, [_perfect(doc)]).items():
                items.setdefault(metric, []).append(value)
        scores = {m: task.aggregation()[m](v) for m, v in items.items()}
        assert scores == expected[name]
