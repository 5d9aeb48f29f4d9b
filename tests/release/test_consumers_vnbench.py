"""VNBench JSON against VideoNIAH's own loading and scoring logic.

Reference: ``joez17/VideoNIAH`` at commit 8193a3b20ac1c2fcac9c3e8c1550095628f7628f
(2025-03-09): ``llava_examples/model_video_niah.py`` (how an annotation entry becomes a result
line), ``evaluation/eval.py`` and ``llava_examples/evaluation_utils.py`` (the two scorers).
The functions below re-implement what those scripts do, written from reading them.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from needleforge.errors import ReleaseError
from needleforge.evaluate import Prediction, load_questions, score
from needleforge.release.exports import write_exports
from needleforge.release.vnbench_files import OFFICIAL_TASKS
from tests.release.consumer_cases import (
    ACT,
    LONG,
    grounding_records,
    load_json,
    vnbench_choice_records,
    write_release,
)

Result = dict[str, Any]


def result_line(entry: dict[str, Any], pred: str) -> Result:
    """What model_video_niah.py writes for one annotation entry (plus eval.py's keys): the
    letter of ``gt`` among ``options``, ``type`` as ``task_type``, ``video`` as
    ``video_path``; eval.py reads ``question_id``, ``type``, ``gt`` and ``pred``."""
    gt = "ABCD"[entry["options"].index(entry["gt"])]
    return {"video_path": entry["video"], "task_type": entry["type"], "try": entry["try"],
            "gt": gt, "pred": pred, "question_id": entry["question_id"],
            "type": entry["type"]}


def eval_py(results: list[Result]) -> dict[str, float]:
    """evaluation/eval.py: per type, tries grouped by question_id[:-2], a sample counts when
    its 4 tries are right (first of A-D found in the prediction before a '.'), types averaged.
    """
    per_type: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in results:
        pred = str(r["pred"]).split(".")[0]
        letter = next((c for c in "ABCD" if c in pred), pred)
        per_type[r["type"]][r["question_id"][:-2]] += int(letter == r["gt"])
    acc = {t: sum(v == 4 for v in names.values()) / len(names)
           for t, names in sorted(per_type.items())}
    return {**acc, "Overall": sum(acc.values()) / len(acc)}


def evaluation_utils(results: list[Result]) -> dict[str, float]:
    """llava_examples/evaluation_utils.py get_detail_result: tries grouped by video_path (4 per
    video asserted), per-type accuracy, then each of ret/ord/cnt is the SUM of the types whose
    name contains it, divided by 3; ret_insert1 and ret_insert2 are read by name (KeyError when
    absent); Overall is the mean of the three."""
    hits: dict[str, int] = defaultdict(int)
    task_of: dict[str, str] = {}
    for r in results:
        hits[r["video_path"]] += int(r["pred"][0] == r["gt"])
        task_of[r["video_path"]] = r["task_type"]
    assert 4 * len(hits) == len(results)
    correct: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for video, n in hits.items():
        correct[task_of[video]] += int(n == 4)
        count[task_of[video]] += 1
    acc = {t: correct[t] / count[t] for t in count}
    groups = {g: sum(v for t, v in acc.items() if g in t) / 3 for g in ("ret", "ord", "cnt")}
    acc["ret_insert1"], acc["ret_insert2"] = acc["ret_insert2"], acc["ret_insert1"]
    return {**acc, **groups, "Overall": sum(groups.values()) / 3}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """9 official types x 12 samples, Long and Act x 12, and a few grounding questions."""
    records = vnbench_choice_records(samples_per_task=12, seed=11) + grounding_records(5)
    return write_release(tmp_path_factory.mktemp("vnbench-release"), records)


def _answers(entries: list[dict[str, Any]], how: str, rng: random.Random) -> dict[str, str]:
    """question_id → predicted letter: perfect, uniformly random, or right on retrieval only."""
    out = {}
    for e in entries:
        right = e["gt_option"]
        if how == "perfect" or (how == "retrieval" and e["type"].startswith("ret")):
            out[e["question_id"]] = right
        elif how == "retrieval":
            out[e["question_id"]] = "ABCD"[("ABCD".index(right) + 1) % 4]
        else:
            out[e["question_id"]] = rng.choice("ABCD")
    return out


def _ours(release: Path, entries: list[dict[str, Any]], answers: dict[str, str]) -> float:
    """Our overall for the same letters (needleforge score on the release's questions)."""
    questions = load_questions(release / "questions.jsonl")
    preds = [Prediction(question_id=e["sample_id"], try_index=e["try"],
                        response=answers[e["question_id"]]) for e in entries]
    chosen = {e["sample_id"] for e in entries}
    report = score([q for q in questions if q.question_id in chosen], preds)
    assert report.vnbench is not None
    return report.vnbench.overall


def test_vnbench_json_holds_exactly_the_nine_official_types(release: Path) -> None:
    main = load_json(release / "exports/vnbench.json")
    assert {e["type"] for e in main} == set(OFFICIAL_TASKS)
    assert {e["type"] for e in load_json(release / "exports/vnbench_long.json")} == set(LONG)
    assert {e["type"] for e in load_json(release / "exports/vnbench_act.json")} == set(ACT)
    for entry in main:  # what model_video_niah.py reads, and the video it resolves
        assert entry["gt"] in entry["options"] and (release / entry["video"]).is_file()
        assert entry["options"]["ABCD".index(entry["gt_option"])] == entry["gt"]


def test_every_id_groups_into_exactly_four_tries(release: Path) -> None:
    for name in ("vnbench.json", "vnbench_long.json", "vnbench_act.json"):
        entries = load_json(release / "exports" / name)
        by_id: dict[tuple[str, str], list[int]] = defaultdict(list)
        by_video: dict[str, list[int]] = defaultdict(list)
        for e in entries:
            by_id[(e["type"], e["question_id"][:-2])].append(e["try"])  # eval.py's key
            by_video[e["video"]].append(e["try"])  # evaluation_utils.py's key
            assert e["question_id"][:-2] == e["sample_id"]
        assert all(sorted(t) == [0, 1, 2, 3] for t in by_id.values())
        assert all(sorted(t) == [0, 1, 2, 3] for t in by_video.values())
        assert len(by_id) == len(by_video) == len(entries) // 4


@pytest.mark.parametrize("how", ["perfect", "random", "retrieval"])
def test_both_official_scorers_agree_with_needleforge_score(release: Path, how: str) -> None:
    entries = load_json(release / "exports/vnbench.json")
    answers = _answers(entries, how, random.Random(5))
    results = [result_line(e, answers[e["question_id"]]) for e in entries]
    official = eval_py(results)["Overall"]
    assert evaluation_utils(results)["Overall"] == pytest.approx(official)
    assert _ours(release, entries, answers) == pytest.approx(official)
    if how == "perfect":
        assert official == 1.0
    elif how == "random":
        assert official < 0.05  # chance of 4 right tries is 1/256
        tries = sum(answers[e["question_id"]] == e["gt_option"] for e in entries) / len(entries)
        assert tries == pytest.approx(0.25, abs=0.06)
    else:
        assert official == pytest.approx(1 / 3)


def test_long_and_act_files_score_on_their_own_with_eval_py(release: Path) -> None:
    for name in ("vnbench_long.json", "vnbench_act.json"):
        entries = load_json(release / "exports" / name)
        results = [result_line(e, e["gt_option"]) for e in entries]
        assert eval_py(results)["Overall"] == 1.0


def test_one_file_of_every_type_would_score_133_percent(release: Path) -> None:
    """Why Long and Act ship apart: evaluation_utils sums every type named ret*/ord*/cnt*."""
    entries = [e for name in ("vnbench.json", "vnbench_long.json", "vnbench_act.json")
               for e in load_json(release / "exports" / name)]
    results = [result_line(e, e["gt_option"]) for e in entries]
    assert evaluation_utils(results)["Overall"] > 1.0


@pytest.mark.parametrize("missing", [("cnt_edit2",), ("ret_insert1", "ord_insert2")])
def test_a_release_missing_a_type_is_refused(tmp_path: Path, missing: tuple[str, ...]) -> None:
    records = vnbench_choice_records(samples_per_task=2, skip=missing)
    with pytest.raises(ReleaseError, match="lacks the official task type") as caught:
        write_exports(tmp_path, records, release_name="partial")
    assert all(t in str(caught.value) for t in missing)


def test_a_sample_without_its_four_tries_is_refused(tmp_path: Path) -> None:
    records = vnbench_choice_records(samples_per_task=2, long=False, act=False)
    with pytest.raises(ReleaseError, match=r"without exactly the tries 0\.\.3"):
        write_exports(tmp_path, records[1:], release_name="short")
