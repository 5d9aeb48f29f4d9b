"""Release question records shaped like the studio sample's, generated without any media.

Why no media: the bias audit reads question records only, and what decides its figures is how
the generators place answers and draw options, not pixels. So this builds the studio corpus's
*layout* from ``params.yaml`` — its program of 420 s videos cut into 4–12 s scenes (the
studio's own :func:`~needleforge.studio.plan.scene_lengths`), its real clips' lengths — and
runs the real generators on it: NeMo's short montage planner
(:func:`~needleforge.nemo.plan.plan_short_montage`, targets placed by time) and VNBench's
sample composer (:func:`~needleforge.vnbench.compose.compose_sample`, balanced options), with
stand-in needle files (one tiny PNG; clip paths never opened). A seed takes under a second.

The planted biases are edits of such records that keep them valid scorer questions.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from pathlib import Path
from typing import Any

from PIL import Image

from needleforge.nemo import PlanSkip, Target, plan_short_montage
from needleforge.params import Params, load_params
from needleforge.records import (
    Authorization,
    Box,
    MediaInfo,
    ObjectAttributes,
    ObjectTrack,
    Scene,
    TimedBox,
    Video,
    object_id_for,
    scene_id_for,
    video_id_for,
)
from needleforge.studio.plan import scene_lengths
from needleforge.vnbench.assets import BUILTIN_IMAGES, ImageSet, NeedleImage
from needleforge.vnbench.clips import MOTIONS, ClipSet, NeedleClip
from needleforge.vnbench.compose import Layout, compose_sample
from needleforge.vnbench.export import choice_records
from needleforge.vnbench.plan import pick_haystacks
from needleforge.vnbench.records import VNBenchError
from needleforge.vnbench.stage import usable_names
from needleforge.vnbench.subtasks import ACT_SUBTASKS, SUBTASKS, Pools
from needleforge.vnbench.text import default_font_path

PARAMS_FILE = Path(__file__).resolve().parents[2] / "params.yaml"
#: Lengths (s) of the studio's four real clips, as probed in the sample corpus.
REAL_CLIPS_S = (10.0, 5.28, 4.004, 7.6)
LABELS = ("cat", "dog", "car", "bicycle", "cup", "person", "bird", "umbrella", "clock", "horse")
COLOURS = ("red", "blue", "white", "black", "grey", "green", "brown", "orange")
Record = dict[str, Any]


def studio_params(seed: int) -> Params:
    """The sample's params with every generation seed set to ``seed``."""
    params = load_params(PARAMS_FILE)
    return params.model_copy(update={
        "nemo": params.nemo.model_copy(update={"seed": seed}),
        "vnbench": params.vnbench.model_copy(update={"seed": seed})})


def _video(name: str, duration_s: float) -> Video:
    sha = hashlib.sha256(name.encode()).hexdigest()
    return Video(
        video_id=video_id_for(sha), sha256=sha, program="studio-a", source_path=f"{name}.mp4",
        stored_path=f"/media/{name}.mp4", size_bytes=1000,
        media=MediaInfo(duration_s=duration_s, fps=25.0, width=640, height=360,
                        video_codec="h264", n_frames=int(duration_s * 25)),
        authorization=Authorization(rights_holder="studio", licence_id="sample-1.0",
                                    scope=("benchmark",), valid_until=dt.date(2099, 12, 31)))


def studio_videos(params: Params) -> list[Video]:
    """The program's episodes and the real clips (ids from their names: stable)."""
    program = params.studio.programs[0]
    episodes = [_video(f"{program.name}-{i}", program.video_duration_s)
                for i in range(program.n_videos)]
    return episodes + [_video(f"real-{i}", s) for i, s in enumerate(REAL_CLIPS_S)]


def _scenes(video: Video, params: Params) -> list[Scene]:
    program, fps = params.studio.programs[0], 25
    lengths = scene_lengths(random.Random(f"scenes:{video.video_id}"),
                            n_frames=round(video.media.duration_s * fps),
                            min_frames=round(program.min_scene_s * fps),
                            max_frames=round(program.max_scene_s * fps))
    scenes, frame = [], 0
    for i, n in enumerate(lengths):
        scenes.append(Scene(scene_id=scene_id_for(video.video_id, i), video_id=video.video_id,
                            index=i, start_s=frame / fps, end_s=(frame + n) / fps, n_frames=n))
        frame += n
    return scenes


def _track(scene: Scene, rng: random.Random) -> ObjectTrack:
    """A featured object: visible at least 4 s of its scene, as the studio places them."""
    start = scene.start_s + rng.uniform(0.0, max(0.0, scene.duration_s - 4.5))
    end = rng.uniform(min(start + 4.2, scene.end_s), scene.end_s)
    label, colour = rng.choice(LABELS), rng.choice(COLOURS)
    return ObjectTrack(
        object_id=object_id_for(scene.scene_id, 0), scene_id=scene.scene_id, index=0,
        tag=label, start_s=start, end_s=end, visible_s=end - start, mean_area_frac=0.1,
        mean_score=0.8, boxes=(TimedBox(start, Box(0.1, 0.1, 0.3, 0.3)),),
        attributes=ObjectAttributes(colour=colour, position="centre", size_rank=1),
        referring_expression=f"the {colour} {label}", backend="test", model_version="1")


def _grounding(target: Target, plan: Any, rng: random.Random) -> Record:
    if target.target_object is not None:
        text = f"When does {target.target_object.referring_expression} appear?"
    else:
        text = f"Find the moment that shows a scene with a {rng.choice(COLOURS)} " \
               f"{rng.choice(LABELS)}."
    start, end = plan.target_spans()[0]
    return {"question_id": f"q-{plan.montage_id}-{target.needle_type}", "family": "nemo",
            "task": f"{target.needle_type}_grounding", "bucket": plan.bucket,
            "needle_type": target.needle_type, "n_needles": 1, "question": text,
            "video": f"videos/{plan.montage_id}.mp4", "duration_s": round(plan.duration_s, 3),
            "answer_spans": [[round(start, 3), round(end, 3)]]}


def nemo_records(params: Params, *, n_targets: int = 120) -> list[Record]:
    """Short montage grounding questions for up to ``n_targets`` targets of the episodes."""
    videos = studio_videos(params)[: params.studio.programs[0].n_videos]
    rng = random.Random(f"targets:{params.nemo.seed}")
    records: list[Record] = []
    pool = [(v, s) for v in videos for s in _scenes(v, params)]
    for video, scene in rng.sample(pool, len(pool)):
        if len(records) >= n_targets or scene.duration_s <= params.nemo.min_scene_s:
            continue
        negatives = [s for v, s in pool if v is video and s.scene_id != scene.scene_id]
        rng.shuffle(negatives)
        target = (Target("object", scene, _track(scene, rng)) if rng.random() < 0.5
                  else Target("scene", scene))
        plan = plan_short_montage(target, negatives, params=params.nemo,
                                  rng=random.Random(f"{params.nemo.seed}:{target.target_id}"))
        if not isinstance(plan, PlanSkip):
            records.append(_grounding(target, plan, rng))
    return records


def _pools(params: Params, needle_png: Path) -> Pools:
    seen: dict[str, NeedleImage] = {}
    for item in BUILTIN_IMAGES:
        seen.setdefault(item.label, NeedleImage(item.category, item.label, needle_png))
    clips = ClipSet(tuple(NeedleClip(label, needle_png.with_suffix(".mp4"))
                          for label in sorted(MOTIONS)))
    vnb = params.vnbench
    return Pools(names=usable_names(default_font_path())[0], images=ImageSet(tuple(sorted(
        seen.values(), key=lambda i: (i.category, i.label)))), clips=clips,
        level_categories={1: tuple(vnb.level1_categories), 2: tuple(vnb.level2_categories)},
        count_min=vnb.count_min, count_max=vnb.count_max)


def vnbench_records(params: Params, tmp: Path, *, samples: int | None = None) -> list[Record]:
    """The 4 tries of every sample of the sample's VNBench recipe (main tasks and Act)."""
    needle_png = tmp / "needle.png"
    if not needle_png.exists():
        Image.new("RGB", (40, 30), "orange").save(needle_png)
    vnb = params.vnbench
    if samples is not None:
        vnb = vnb.model_copy(update={"samples_per_subtask": samples})
    haystacks, _ = pick_haystacks(studio_videos(params), n=vnb.samples_per_subtask,
                                  min_s=vnb.min_haystack_s, max_s=vnb.max_haystack_s,
                                  seed=vnb.seed, tag="main")
    specs = [SUBTASKS[t] for t in vnb.tasks] + (list(ACT_SUBTASKS.values())
                                                if vnb.include_act else [])
    layout = Layout(width=params.render.width, height=params.render.height,
                    clip_s=vnb.clip_needle_s, count_sigma=vnb.count_sigma)
    pools = _pools(params, needle_png)
    records: list[Record] = []
    for index, haystack in enumerate(haystacks):
        for spec in specs:
            try:
                sample = compose_sample(spec, haystack=haystack, pools=pools, index=index,
                                        seed=vnb.seed, layout=layout)
            except VNBenchError:
                continue
            records += choice_records(sample)
    return records


def studio_release(seed: int, tmp: Path) -> list[Record]:
    """NeMo and VNBench records of the sample recipe at ``seed``."""
    params = studio_params(seed)
    return nemo_records(params) + vnbench_records(params, tmp)
