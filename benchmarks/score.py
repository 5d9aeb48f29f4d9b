"""Scorer speed at NeMoBench-Full scale, as ratios against reading the same JSONL in this run.

Synthesizes 31,378 multi-span grounding questions (1–4 target spans, short/medium/long
montages, object/scene needles) and one prediction per question in the forms a model adapter
writes: scored spans, unscored spans, free-text ranges, refusals, unreadable text, and a few
missing. Optionally adds VNBench-scale multiple choice (1,350 samples × 4 tries).

Baseline (same run): ``json.loads`` of every line of both files — what any scorer must at least
do. Figures: loading into validated records, ``score`` itself, ``to_dict`` + Markdown, and the
whole ``score_files``, each as seconds and as a multiple of the baseline. The median of
``--repeat`` runs is printed. Run: ``python benchmarks/score.py [--questions 31378]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from needleforge.evaluate import load_predictions, load_questions, score, score_files

NEMO_FULL = 31_378
VNBENCH = 1_350
GOAL_S = 2.0
_BUCKETS = (("short", 60.0, 150.0), ("medium", 150.0, 900.0), ("long", 900.0, 3600.0))


def _grounding(rng: random.Random, i: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    bucket, low, high = rng.choice(_BUCKETS)
    duration = round(rng.uniform(low, high), 2)
    n = rng.choice((1, 1, 2, 3, 4))
    starts = sorted(rng.sample(range(int(duration) - 12), n))
    spans = [[float(s), round(s + rng.uniform(2.0, 10.0), 2)] for s in starts]
    needle = rng.choice(("object", "scene"))
    question = {"question_id": f"g{i:06d}", "family": "nemo", "task": f"{needle}_grounding",
                "question": "When does it happen?", "video": f"m/{i}.mp4",
                "duration_s": duration, "bucket": bucket, "needle_type": needle,
                "n_needles": n, "answer_spans": spans}
    jitter = [[max(0.0, s + rng.uniform(-2, 2)), e + rng.uniform(-2, 2)] for s, e in spans]
    jitter = [[s, max(s, e)] for s, e in jitter]
    extra = [[float(s), s + 5.0] for s in rng.sample(range(int(duration) - 6), rng.randint(0, 2))]
    form = rng.random()
    qid = question["question_id"]
    if form < 0.02:
        return question, None
    if form < 0.40:
        return question, {"question_id": qid, "pred_spans": [
            [s, e, round(rng.random(), 3)] for s, e in jitter + extra]}
    if form < 0.70:
        return question, {"question_id": qid, "pred_spans": jitter + extra}
    if form < 0.97:
        text = " and ".join(f"from {s:.1f} to {e:.1f} seconds" for s, e in jitter)
        return question, {"question_id": qid, "response": f"The needle appears {text}."}
    if form < 0.985:
        return question, {"question_id": qid, "response": "I'm sorry, I cannot determine that."}
    return question, {"question_id": qid, "response": "It is somewhere in the video."}


def _choice(rng: random.Random, i: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    task = rng.choice(("ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1",
                       "ord_insert2", "cnt_edit1", "cnt_edit2", "cnt_insert1"))
    options = [f"word{rng.randrange(10**6)}-{k}" for k in range(4)]
    questions, preds = [], []
    for t in range(4):
        rotated = options[t:] + options[:t]
        answer = (0 - t) % 4
        questions.append({"question_id": f"v{i:05d}", "family": "vnbench", "task": task,
                          "question": "What is the secret word?", "video": f"h/{i}.mp4",
                          "duration_s": 60.0, "bucket": "short", "needle_type": "subtitle",
                          "n_needles": 1, "options": rotated, "answer_index": answer, "try": t})
        letter = "ABCD"[answer if rng.random() < 0.8 else rng.randrange(4)]
        preds.append({"question_id": f"v{i:05d}", "try": t, "response": f"Answer: {letter}"})
    return questions, preds


def _write(folder: Path, *, n_grounding: int, n_choice: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    questions: list[dict[str, Any]] = []
    preds: list[dict[str, Any]] = []
    for i in range(n_grounding):
        q, p = _grounding(rng, i)
        questions.append(q)
        preds.extend([p] if p else [])
    for i in range(n_choice):
        qs, ps = _choice(rng, i)
        questions += qs
        preds += ps
    q_path, p_path = folder / "questions.jsonl", folder / "predictions.jsonl"
    q_path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    p_path.write_text("".join(json.dumps(p) + "\n" for p in preds), encoding="utf-8")
    return q_path, p_path


def _median_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _json_only(*paths: Path) -> None:
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                json.loads(line)


def _measure(q_path: Path, p_path: Path, *, repeat: int) -> dict[str, float]:
    questions, preds = load_questions(q_path), load_predictions(p_path)
    report = score(questions, preds)
    return {
        "baseline: json.loads of both files": _median_s(lambda: _json_only(q_path, p_path),
                                                        repeat),
        "load_questions + load_predictions": _median_s(
            lambda: (load_questions(q_path), load_predictions(p_path)), repeat),
        "score(questions, predictions)": _median_s(lambda: score(questions, preds), repeat),
        "to_dict + to_markdown": _median_s(lambda: (report.to_dict(), report.to_markdown()),
                                           repeat),
        "score_files (all of it)": _median_s(lambda: score_files(q_path, p_path), repeat),
    }


def _print(title: str, figures: dict[str, float]) -> None:
    base = next(iter(figures.values()))
    print(f"\n{title}\n{'part':<38} {'seconds':>9} {'x baseline':>11}")
    for name, seconds in figures.items():
        print(f"{name:<38} {seconds:>9.3f} {seconds / base:>11.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=NEMO_FULL, help="grounding questions")
    parser.add_argument("--vnbench", type=int, default=VNBENCH,
                        help="multiple-choice samples (4 tries each) for the second table; 0: skip")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "g").mkdir()
        q_path, p_path = _write(root / "g", n_grounding=args.questions, n_choice=0,
                                seed=args.seed)
        figures = _measure(q_path, p_path, repeat=args.repeat)
        _print(f"{args.questions:,} grounding questions (NeMoBench-Full scale)", figures)
        report = score_files(q_path, p_path)
        overall = report.grounding["all"]["all"]
        print(f"sanity: R@1x 0.7 = {overall.recall[0.7]:.3f}, avg mAP = "
              f"{overall.average_map:.3f}, issues = {report.issue_counts()}")
        scored = figures["score(questions, predictions)"]
        verdict = "met" if scored < GOAL_S else "NOT met"
        print(f"goal: score() under {GOAL_S:.0f} s at this scale: {verdict} ({scored:.3f} s)")
        if args.vnbench:
            (root / "v").mkdir()
            q_path, p_path = _write(root / "v", n_grounding=0, n_choice=args.vnbench,
                                    seed=args.seed)
            _print(f"{args.vnbench:,} VNBench samples x 4 tries",
                   _measure(q_path, p_path, repeat=args.repeat))


if __name__ == "__main__":
    main()
