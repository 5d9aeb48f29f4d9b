"""A small hand-built store and fake renders for the release tests.

Why by hand: every number in it is known, so the tests can check answers, counts and the
changelog exactly. Two videos from two programs and licences; montages covering the three
answer rules (one target with needles out of order, two named targets sharing a montage, a
medium montage); questions that pass, fail, split their verifiers or were never verified.

``variant=1`` is the store a week later: one question reworded, one now failing, the
unverified one now verified (a changelog with one change, one removal, one addition).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess
import sys
from pathlib import Path

from needleforge.params import Params, QualityParams
from needleforge.records import (
    Authorization,
    Box,
    MediaInfo,
    Montage,
    ObjectAttributes,
    ObjectTrack,
    Question,
    Representation,
    Scene,
    SceneTag,
    Segment,
    TimedBox,
    Verification,
    Video,
    bucket_for,
    object_id_for,
    scene_id_for,
    video_id_for,
)
from needleforge.store import Store
from tests.conftest import ffmpeg

VA = video_id_for("a" * 64)
VB = video_id_for("b" * 64)
CAT = object_id_for(scene_id_for(VA, 1), 0)
BEACH = scene_id_for(VA, 2)
HARBOUR = scene_id_for(VB, 2)
RELEASED_MONTAGES = ("m-multi", "m-obj", "m-shared")
#: Params of the builds of these cases: q-multi's first needle lasts 2 s, shorter than the
#: default shortest answer window (3 s, quality.min_answer_window_s), which would leave it out;
#: tests of that rule use the defaults.
CASE_PARAMS = Params(quality=QualityParams(min_answer_window_s=2.0))
ALL_MONTAGES = (*RELEASED_MONTAGES, "m-failed", "m-unverified")


def make_video(digit: str, *, program: str, holder: str, licence: str) -> Video:
    sha = digit * 64
    return Video(
        video_id=video_id_for(sha), sha256=sha, program=program, source_path=f"/src/{digit}.mp4",
        stored_path=f"/media/{digit}.mp4", size_bytes=1000,
        media=MediaInfo(duration_s=600.0, fps=25.0, width=640, height=360, video_codec="h264",
                        n_frames=15000),
        authorization=Authorization(rights_holder=holder, licence_id=licence,
                                    scope=("benchmark",), valid_until=dt.date(2099, 1, 1)),
    )


def make_representation(video_id: str, *, with_cat: bool) -> Representation:
    scenes = tuple(Scene(scene_id=scene_id_for(video_id, i), video_id=video_id, index=i,
                         start_s=i * 60.0, end_s=(i + 1) * 60.0, n_frames=1500)
                   for i in range(6))
    tags = [SceneTag(scene_id_for(video_id, 2), "beach", 0.9, "embedded", "tagger-1"),
            SceneTag(scene_id_for(video_id, 2), "sky", 0.5, "embedded", "tagger-1")]
    objects: tuple[ObjectTrack, ...] = ()
    if with_cat:
        objects = (ObjectTrack(
            object_id=CAT, scene_id=scene_id_for(video_id, 1), index=0, tag="cat",
            start_s=61.0, end_s=66.0, visible_s=5.0, mean_area_frac=0.1, mean_score=0.8,
            boxes=tuple(TimedBox(61.0 + k, Box(0.1, 0.2, 0.3, 0.3)) for k in range(5)),
            attributes=ObjectAttributes(colour="grey", position="left", size_rank=1),
            referring_expression="the grey cat", backend="embedded", model_version="det-1"),)
    return Representation(video_id=video_id, scenes=scenes, tags=tuple(tags), objects=objects,
                          scene_detector="content", config_hash="h")


def plan(mid: str, pieces: list[tuple[str, float, int | None, str | None]]) -> Montage:
    """A montage from ``(scene_id, duration_s, needle_index, target_id)`` pieces."""
    clock, segments = 0.0, []
    for i, (scene, dur, needle, target) in enumerate(pieces):
        video = scene.rsplit("-s", 1)[0]
        start = int(scene.rsplit("-s", 1)[1]) * 60.0
        segments.append(Segment(position=i, video_id=video, scene_id=scene, src_start_s=start,
                                src_end_s=start + dur, montage_start_s=clock,
                                role="negative" if needle is None else "target",
                                needle_index=needle, target_id=target))
        clock += dur
    return Montage(montage_id=mid, bucket=bucket_for(clock), segments=tuple(segments), seed=7)


def montages() -> list[Montage]:
    sa = [scene_id_for(VA, i) for i in range(6)]
    sb = [scene_id_for(VB, i) for i in range(6)]
    return [
        plan("m-obj", [(sa[0], 5.0, None, None), (sa[1], 4.5, 0, None), (sa[3], 6.0, None, None)]),
        # Needle 1 comes first in the montage: answers are listed in needle order.
        plan("m-multi", [(sa[2], 2.0, 1, None), (sa[4], 10.0, None, None),
                         (sa[2], 3.0, 0, None), (sa[5], 7.1, None, None)]),
        plan("m-shared", [(sb[0], 50.0, None, None), (sa[1], 5.0, 0, CAT),
                          (sb[2], 4.0, 0, HARBOUR), (sb[3], 50.0, None, None),
                          (sa[1], 3.0, 1, CAT), (sb[4], 50.0, None, None)]),
        plan("m-failed", [(sa[0], 8.0, None, None), (sa[2], 4.0, 0, None)]),
        plan("m-unverified", [(sb[1], 8.0, None, None), (sb[2], 4.0, 0, None)]),
    ]


def question(qid: str, mid: str, target: str, text: str) -> Question:
    is_object = target == CAT
    return Question(question_id=qid, montage_id=mid,
                    needle_type="object" if is_object else "scene",
                    target_scene_id=scene_id_for(VA, 1) if is_object else target,
                    target_object_id=CAT if is_object else None, description=f"d {qid}",
                    text=text, template_id="t1", backend="embedded", model_version="writer-1")


def questions(variant: int) -> list[Question]:
    obj_text = "When does the grey cat appear?" if variant == 0 else "When is the grey cat seen?"
    return [
        question("q-obj", "m-obj", CAT, obj_text),
        question("q-multi", "m-multi", BEACH, "When is the beach | <shown>?"),
        question("q-shared-obj", "m-shared", CAT, "When does the cat appear?"),
        question("q-shared-scene", "m-shared", HARBOUR, "When is the harbour shown?"),
        question("q-failed", "m-failed", BEACH, "When is the sandy beach shown?"),
        question("q-unverified", "m-unverified", HARBOUR, "When is the harbour at dusk?"),
    ]


def verdicts(variant: int) -> list[Verification]:
    def v(qid: str, passed: bool, verifier: str = "embedded") -> Verification:
        return Verification(qid, verifier, "ver-1", passed, "ok" if passed else "not unique")

    out = [v("q-obj", True), v("q-multi", variant == 0), v("q-shared-obj", True),
           v("q-shared-obj", True, "judge"), v("q-shared-scene", True),
           v("q-shared-scene", False, "judge"), v("q-failed", False)]
    if variant == 1:
        out.append(v("q-unverified", True))
    return out


def make_store(path: Path, *, variant: int = 0) -> Path:
    """Write the store of the module docstring to ``path`` and return it."""
    with Store(path) as store:
        a = make_video("a", program="studio-a", holder="Studio A", licence="CC-BY-4.0")
        b = make_video("b", program="studio-b", holder="Archive B", licence="CC0-1.0")
        store.upsert_videos([a, b])
        store.record_representation(make_representation(VA, with_cat=True))
        store.record_representation(dataclasses.replace(
            make_representation(VB, with_cat=False), tags=()))
        store.record_generation(montages(), questions(variant), verdicts(variant))
    return path


def make_renders(root: Path) -> Path:
    """One tiny distinct mp4 per montage id, as the render stage would name them.

    ``color=c=<colour>:size=32x32:rate=5:duration=0.4`` (libx264): the release never decodes
    them, it only links them and hashes them, so size and length do not matter.
    """
    root.mkdir(parents=True, exist_ok=True)
    colours = ("red", "green", "blue", "yellow", "white")
    for mid, colour in zip(ALL_MONTAGES, colours, strict=True):
        ffmpeg("-f", "lavfi", "-i", f"color=c={colour}:size=32x32:rate=5:duration=0.4",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", str(root / f"{mid}.mp4"))
    (root / "m-obj.json").write_text("{}\n")  # a render sidecar: not part of the release
    return root


def init_git_dvc(repo: Path, remote: Path) -> None:
    """Make ``repo`` a git repo (branch ``main``, a test identity) with DVC initialised and
    the folder ``remote`` as its default DVC remote ``local``."""
    for cmd in (("git", "init", "-q", "-b", "main"),
                ("git", "config", "user.name", "Needleforge Test"),
                ("git", "config", "user.email", "test@needleforge.invalid"),
                (sys.executable, "-m", "dvc", "init", "-q"),
                (sys.executable, "-m", "dvc", "remote", "add", "-d", "local", str(remote))):
        proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{cmd}: {proc.stderr}"
