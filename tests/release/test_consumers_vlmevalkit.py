"""VLMEvalKit exports against VLMEvalKit's own loading and circular-scoring logic.

Reference: ``open-compass/VLMEvalKit`` at commit e8e78f05f3080fe28154f2130321f17951c3be94:
``vlmeval/smp/file.py`` (``load``: a TSV is ``pd.read_csv(sep='\\t')``),
``vlmeval/dataset/video_base.py`` (``VideoBaseDataset``: needs ``question`` and ``video``
columns, integer ``index``; frames are read from ``<root>/<video>.mp4``),
``vlmeval/dataset/utils/multiple_choice.py`` (``mcq_circular_eval``: ``g_index``, or
``index % 1e6`` when absent; main rows have ``index == g_index``; a group is a hit only when
every row's prediction matches ``answer``; ``report_acc`` averages hits over main rows and per
``category``). The functions below re-implement that, written from reading it. VLMEvalKit
itself is not installed here: the shipped module is tested through its stand-in base class.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from needleforge.evaluate import render_prompt, score_files
from tests.release.consumer_cases import grounding_records, vnbench_choice_records, write_release

EXPORTS = "exports/vlmevalkit"


def vlmeval_load(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t")


def circular_hits(data: pd.DataFrame, predictions: dict[int, str]) -> pd.DataFrame:
    """mcq_circular_eval with exact matching: main rows with their group's hit."""
    g_index = data["g_index"] if "g_index" in data else data["index"] % 1_000_000
    data = data.assign(g_index=[int(g) for g in g_index])
    main = data[data["index"] == data["g_index"]].copy()
    hits = []
    for idx in main["index"]:
        group = data[data["g_index"] == idx]
        hits.append(int(all(predictions[int(i)] == a
                            for i, a in zip(group["index"], group["answer"], strict=True))))
    main["hit"] = hits
    return main


def report_acc(main: pd.DataFrame) -> dict[str, float]:
    out = {"Overall": float(main["hit"].mean())}
    for cat, sub in main.groupby("category"):
        out[str(cat)] = float(sub["hit"].mean())
    return out


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    records = vnbench_choice_records(samples_per_task=10, seed=4) + grounding_records(12)
    return write_release(tmp_path_factory.mktemp("vlmevalkit-release"), records)


@pytest.fixture(scope="module")
def shipped(release: Path) -> ModuleType:
    """The dataset module as a user drops it in: loaded from the release, not the package."""
    path = release / EXPORTS / "needleforge_vlmevalkit.py"
    spec = importlib.util.spec_from_file_location("needleforge_vlmevalkit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # registered as an import of it would be
    spec.loader.exec_module(module)
    return module


def test_mcq_tsv_follows_the_video_mcq_conventions(release: Path) -> None:
    data = vlmeval_load(release / EXPORTS / "needleforge_mcq.tsv")
    assert {"index", "question", "video", "A", "B", "C", "D", "answer", "category",
            "g_index"} <= set(data.columns)
    assert data["index"].dtype.kind == "i" and data["index"].is_unique
    assert data["try"].dtype.kind == "i"  # no float tries, no NaN rows
    assert set(data["answer"]) == set("ABCD")
    assert all((release / p).is_file() for p in data["video_path"])
    assert all(f"{v}.mp4" == p for v, p in zip(data["video"], data["video_path"], strict=True))
    assert (data["index"] % 1_000_000 == data["g_index"]).all()


def test_every_circular_group_has_exactly_four_tries(release: Path) -> None:
    data = vlmeval_load(release / EXPORTS / "needleforge_mcq.tsv")
    main = data[data["index"] == data["g_index"]]
    sizes = data.groupby("g_index").size()
    assert set(sizes) == {4} and len(sizes) == len(main) == data["question_id"].nunique()
    for _, group in data.groupby("g_index"):
        assert sorted(group["try"]) == [0, 1, 2, 3] and group["question_id"].nunique() == 1
        assert sorted(group["answer"]) == list("ABCD")  # the right option under every letter


@pytest.mark.parametrize("how", ["perfect", "random"])
def test_circular_scoring_perfect_and_random(release: Path, how: str) -> None:
    data = vlmeval_load(release / EXPORTS / "needleforge_mcq.tsv")
    rng = random.Random(8)
    preds = {int(i): a if how == "perfect" else rng.choice("ABCD")
             for i, a in zip(data["index"], data["answer"], strict=True)}
    acc = report_acc(circular_hits(data, preds))
    if how == "perfect":
        assert set(acc.values()) == {1.0}
    else:
        assert acc["Overall"] < 0.05  # chance: (1/4)^4 per sample


def test_grounding_tsv_has_no_empty_option_or_try_columns(release: Path) -> None:
    data = vlmeval_load(release / EXPORTS / "needleforge_grounding.tsv")
    assert {"index", "question", "video", "answer"} <= set(data.columns)
    assert not {"A", "candidates", "try"} & set(data.columns)
    assert not data.isna().any().any()
    assert all(isinstance(json.loads(a), list) for a in data["answer"])


def test_module_imports_only_the_standard_library_and_pandas(release: Path) -> None:
    tree = ast.parse((release / EXPORTS / "needleforge_vlmevalkit.py").read_text())
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import)
           for alias in node.names}
    top |= {node.module.split(".")[0] for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module}
    assert top <= {*sys.stdlib_module_names, "__future__", "pandas"}, top


def test_module_builds_prompts_with_the_video_or_frames(
        shipped: ModuleType, release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mcq = shipped.NeedleforgeVideoMCQ(release_dir=str(release), nframe=4)
    row = mcq.data.iloc[0]
    video, text = mcq.build_prompt(0, video_llm=True)
    assert video == {"type": "video", "value": str(release / row["video_path"])}
    options = [row[c] for c in "ABCD"]
    assert text["value"].endswith(render_prompt(row["question"], kind="choice", options=options))
    frames = [f"/tmp/f{i}.jpg" for i in range(4)]
    monkeypatch.setattr(mcq, "save_video_frames", lambda video: frames)
    messages = mcq.build_prompt(0, video_llm=False)
    assert [m["value"] for m in messages[:4]] == frames
    assert "the 4 frames are taken at" in messages[4]["value"]
    grounding = shipped.NeedleforgeVideoGrounding(release_dir=str(release), nframe=4)
    text = grounding.build_prompt(0, video_llm=True)[-1]["value"]
    assert text.endswith(render_prompt(grounding.data.iloc[0]["question"], kind="grounding"))


def _prediction_file(dataset: Any, path: Path, answer: Any) -> Path:
    table = dataset.data.copy()
    table["prediction"] = [answer(row) for _, row in table.iterrows()]
    table.to_csv(path, sep="\t", index=False)
    return path


def test_module_scores_with_the_needleforge_scorer(shipped: ModuleType, release: Path,
                                                   tmp_path: Path) -> None:
    mcq = shipped.NeedleforgeVideoMCQ(release_dir=str(release))
    perfect = _prediction_file(mcq, tmp_path / "mcq.tsv", lambda row: row["answer"])
    result = mcq.evaluate(str(perfect))
    assert result["VNBench overall"] == 100.0 and result["circular accuracy"] == 100.0
    grounding = shipped.NeedleforgeVideoGrounding(release_dir=str(release))
    spans = _prediction_file(grounding, tmp_path / "g.tsv", lambda row: ", ".join(
        f"{s} - {e}" for s, e in json.loads(row["answer"])))
    result = grounding.evaluate(str(spans))
    assert result["R@1x tIoU 0.7"] == 100.0 and result["average mAP"] == 100.0
    # Without needleforge where VLMEvalKit runs: convert, then `needleforge score`.
    out = tmp_path / "preds.jsonl"
    assert shipped.write_needleforge_predictions(str(spans), str(out), release=release) == 12
    report = score_files(release / "questions.jsonl", out)
    assert report.grounding["all"]["all"].recall[0.7] == 1.0


def test_a_missing_release_is_a_clear_error(shipped: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path / EXPORTS)):
        shipped.NeedleforgeVideoMCQ(release_dir=str(tmp_path))
