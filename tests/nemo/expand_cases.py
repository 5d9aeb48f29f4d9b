"""Synthetic tables and verified short questions for the expansion tests.

Records are made here, not by the earlier stages, so each test controls the programs, the
videos and the tags. :func:`short_stage` stands in for stage 2 with its real pieces
(``select_targets``, ``select_negatives``, ``plan_short_montage``) and writes simple
descriptions ("the white cat", "A scene tagged cup, park and street.") with a pass verdict,
so expansion gets exactly what a passing stage 2 would give it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
from collections.abc import Mapping
from typing import Any

from nemo_cases import make_tag, make_track, make_video, tile

from needleforge.nemo.expand import ExpansionResult, expand
from needleforge.nemo.negatives import clashes, excluded_terms, select_negatives
from needleforge.nemo.plan import PlanSkip, plan_short_montage, question_id_for
from needleforge.nemo.tables import SceneTables, index_tables
from needleforge.nemo.targets import Target, select_targets
from needleforge.params import ExpandParams, NemoParams
from needleforge.records import (
    Montage,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)

LABELS = ("cat", "dog", "car", "cup", "tree", "bench", "bicycle", "lamp", "chair", "bottle",
          "horse", "boat", "person", "bus", "kite", "clock", "book", "vase", "bird", "sheep",
          "tabby cat", "red car")
PLACES = ("street", "kitchen", "park", "beach", "office", "garden", "stage", "market",
          "river", "bridge", "forest", "harbour")


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Tables of several programs' videos."""

    videos: list[Video]
    scenes: list[Scene]
    tags: list[SceneTag]
    objects: list[ObjectTrack]

    def kwargs(self) -> dict[str, Any]:
        return {"videos": self.videos, "scenes": self.scenes, "tags": self.tags,
                "objects": self.objects}


@dataclasses.dataclass(frozen=True)
class Short:
    """Stage-2 output: verified short montages and their questions."""

    montages: list[Montage]
    questions: list[Question]
    verifications: list[Verification]

    def kwargs(self) -> dict[str, Any]:
        return {"montages": self.montages, "questions": self.questions,
                "verifications": self.verifications}



#: Stage 2 at the NeMo paper's target thresholds, which these cases were built around (the
#: defaults are lower for broadcast pacing).
PAPER_NEMO = NemoParams(min_scene_s=5.0, min_visible_s=4.0, min_scene_tags=2)

def corpus(programs: Mapping[str, int] | None = None, *, scenes: int = 80, seed: int = 0,
           min_s: float = 4.0, max_s: float = 20.0) -> Corpus:
    """``programs`` maps program name → number of videos (default one program of 3)."""
    rng = random.Random(f"expand-cases:{seed}")
    vocab = list(LABELS) + list(PLACES)
    out = Corpus([], [], [], [])
    for program, n_videos in (programs or {"p1": 3}).items():
        for v in range(n_videos):
            sha = hashlib.sha256(f"{program}/{v}/{seed}".encode()).hexdigest()
            video = dataclasses.replace(make_video(sha), program=program)
            out.videos.append(video)
            durations = [rng.uniform(min_s, max_s) for _ in range(scenes)]
            video_scenes = tile(durations, video_id=video.video_id, start_s=rng.uniform(0, 1))
            out.scenes.extend(video_scenes)
            for scene in video_scenes:
                for name in rng.sample(vocab, rng.randint(2, 4)):
                    out.tags.append(make_tag(scene, name, round(rng.random(), 3)))
                for k in range(rng.choice((0, 1, 1, 2))):
                    start = scene.start_s + rng.uniform(0.0, 0.2) * scene.duration_s
                    out.objects.append(make_track(
                        scene, k, rng.choice(LABELS), start=start,
                        area=rng.uniform(0.03, 0.3),
                        colour=rng.choice(("white", "black", "red", ""))))
    return out


def _description(target: Target, tables: SceneTables) -> str:
    """What the stand-in writer says: the referring expression, or the top three tags."""
    if target.target_object is not None:
        return target.target_object.referring_expression
    return "A scene tagged " + ", ".join(tables.view(target.scene).tag_names[:3]) + "."


def _question(target: Target, plan: Montage, tables: SceneTables) -> Question:
    description = _description(target, tables)
    qid = question_id_for(plan.montage_id, needle_type=target.needle_type,
                          target_id=target.target_id, template_id="test-1")
    return Question(qid, plan.montage_id, target.needle_type, target.scene.scene_id,
                    target.target_object.object_id if target.target_object else None,
                    description, f"When does {description.rstrip('.')} appear?", "test-1",
                    "test", "1")


def short_stage(data: Corpus, *, nemo: NemoParams | None = None, fail_every: int = 0) -> Short:
    """Short montages and passing verdicts for every target (every ``fail_every``-th fails)."""
    nemo = nemo or PAPER_NEMO
    tables = index_tables(data.scenes, tags=data.tags, objects=data.objects)
    out = Short([], [], [])
    for i, target in enumerate(select_targets(tables, params=nemo)):
        rng = random.Random(f"short:{target.target_id}")
        excluded = excluded_terms(target, tables, text=_description(target, tables))
        plan = plan_short_montage(
            target, select_negatives(target, tables, params=nemo, rng=rng, excluded=excluded),
            params=nemo, rng=rng)
        if isinstance(plan, PlanSkip):
            continue
        question = _question(target, plan, tables)
        passed = not (fail_every and i % fail_every == 0)
        out.montages.append(plan)
        out.questions.append(question)
        out.verifications.append(Verification(question.question_id, "test", "1", passed,
                                              "pass" if passed else "fail"))
    return out


def run(data: Corpus, short: Short, params: ExpandParams | None = None,
        nemo: NemoParams | None = None) -> ExpansionResult:
    """``expand`` on the corpus and its short stage."""
    return expand(**data.kwargs(), **short.kwargs(), params=params or ExpandParams(),
                  nemo=nemo or PAPER_NEMO)


_TOL = 1e-6


def _target_of(question: Question, tables: SceneTables) -> Target:
    scene = tables.scenes_by_id[question.target_scene_id]
    if question.target_object_id is None:
        return Target("scene", scene)
    obj = next(o for o in tables.objects_by_scene[scene.scene_id]
               if o.object_id == question.target_object_id)
    return Target("object", scene, obj)


def _check_segments(montage: Montage, tables: SceneTables) -> None:
    """Segments inside their scenes, starting on the whole-second grid; targets apart."""
    for seg in montage.segments:
        scene = tables.scenes_by_id[seg.scene_id]
        assert seg.video_id == scene.video_id
        assert scene.start_s - _TOL <= seg.src_start_s < seg.src_end_s <= scene.end_s + _TOL
        offset = seg.src_start_s - scene.start_s
        assert abs(offset - round(offset)) < _TOL, (seg, scene)
        if seg.role == "target":
            assert seg.target_id is not None and seg.needle_index is not None
    positions = [s.position for s in montage.segments if s.role == "target"]
    assert all(b - a >= 2 for a, b in itertools.pairwise(positions)), positions


def _check_disjoint(montage: Montage, targets: dict[str, Target], tables: SceneTables,
                    nemo: NemoParams) -> None:
    """No scene other than a target's own pieces holds what that target excludes."""
    for target_id, target in targets.items():
        excluded = excluded_terms(target, tables, text=_description(target, tables))
        for seg in montage.segments:
            if seg.role == "target" and seg.target_id == target_id:
                continue
            scene = tables.scenes_by_id[seg.scene_id]
            assert not clashes(scene, tables, excluded=excluded), (target_id, seg.scene_id)


def _check_pieces(montage: Montage, question: Question, source_span: tuple[float, float],
                  params: ExpandParams) -> None:
    """The question's pieces are the source target span exactly, each long enough."""
    target_id = question.target_object_id or question.target_scene_id
    pieces = sorted((s for s in montage.segments if s.target_id == target_id),
                    key=lambda s: s.src_start_s)
    assert sorted(s.needle_index or 0 for s in pieces) == list(range(len(pieces)))
    assert all(s.needle_index is not None for s in pieces)
    assert abs(pieces[0].src_start_s - source_span[0]) < _TOL
    assert abs(pieces[-1].src_end_s - source_span[1]) < _TOL
    for a, b in itertools.pairwise(pieces):
        assert abs(a.src_end_s - b.src_start_s) < _TOL
    if len(pieces) > 1:
        assert source_span[1] - source_span[0] > params.min_multi_target_s
        assert all(p.duration_s >= params.min_piece_s - _TOL for p in pieces)
        assert len(pieces) <= (params.max_pieces or len(pieces))
    spans = montage.target_spans(target_id)
    assert spans and all(-_TOL <= s < e <= montage.duration_s + _TOL for s, e in spans)


def check_invariants(result: ExpansionResult, data: Corpus, short: Short, *,
                     params: ExpandParams, nemo: NemoParams) -> None:
    """Every rule of the expansion brief, checked with stage-2 functions, not expand's own."""
    tables = index_tables(data.scenes, tags=data.tags, objects=data.objects)
    program = {v.video_id: v.program for v in data.videos}
    short_by_id = {m.montage_id: m for m in short.montages}
    source_of = {(q.needle_type, q.target_object_id or q.target_scene_id): q
                 for q in sorted(short.questions, key=lambda q: q.question_id, reverse=True)}
    montages = {m.montage_id: m for m in result.montages}
    assert len(montages) == len(result.montages)
    ranges = {"medium": (params.medium_min_s, params.medium_max_s),
              "long": (params.long_min_s, params.long_max_s), "short": (0.0, 150.0)}
    by_montage: dict[str, list[Question]] = {}
    for q in result.questions:
        by_montage.setdefault(q.montage_id, []).append(q)
    for montage in result.montages:
        low, high = ranges[montage.bucket]
        assert low - _TOL <= montage.duration_s <= high + _TOL, montage.duration_s
        _check_segments(montage, tables)
        questions = by_montage[montage.montage_id]
        targets = {q.target_object_id or q.target_scene_id: _target_of(q, tables)
                   for q in questions}
        assert {s.target_id for s in montage.segments if s.role == "target"} == set(targets)
        _check_disjoint(montage, targets, tables, nemo)
        videos = {t.video_id for t in targets.values()}
        if montage.bucket == "long":
            assert {program[s.video_id] for s in montage.segments} == \
                {program[v] for v in videos}
        else:
            assert {s.video_id for s in montage.segments} == videos
    verdicts = {v.question_id: v for v in result.verifications}
    assert len(verdicts) == len(result.questions) == len(result.verifications)
    for q in result.questions:
        source = source_of[(q.needle_type, q.target_object_id or q.target_scene_id)]
        assert (q.text, q.description, q.template_id) == \
            (source.text, source.description, source.template_id)
        assert q.question_id != source.question_id
        seg = next(s for s in short_by_id[source.montage_id].segments if s.role == "target")
        _check_pieces(montages[q.montage_id], q, (seg.src_start_s, seg.src_end_s), params)
        assert verdicts[q.question_id].passed, verdicts[q.question_id].reason
