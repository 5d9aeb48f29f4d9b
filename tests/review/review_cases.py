"""A tiny real store for the review tests: one ffmpeg-made video of six solid-colour scenes.

Why solid colours: a sheet's answer row must show the target scene, and a test can find it
by its colour; every scene has its own colour, none used by the sheet's own drawing. The
video is made by::

    ffmpeg -f lavfi -i color=c=0x2040C0:s=160x90:r=10:d=3 … (six inputs) \\
        -filter_complex concat=n=6:v=1:a=0 -c:v libx264 -pix_fmt yuv420p -g 10 colours.mp4

Scene ``k`` is ``[3k, 3k + 3)`` s in ``COLOURS[k]``. Scene 1 (magenta) holds a tracked
"kite" whose box is the centre quarter of the frame. Montages (all short):

* ``m-obj``: negatives 0, 2, 3 around the kite's scene 1 → object question ``q-obj``
  (verifier passed);
* ``m-scene``: scene 4 (orange) between negatives 5 and 0 → scene question ``q-scene``
  (verifier failed);
* ``m-multi``: scene 4 cut in two needles (needle 1 first) → ``q-multi``, two needles,
  never verified.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from pathlib import Path

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

COLOURS = ((0x20, 0x40, 0xC0), (0xFF, 0x00, 0xFF), (0x00, 0xC0, 0xC0), (0x80, 0x80, 0x00),
           (0xFF, 0x80, 0x00), (0x00, 0xFF, 0x00))
SCENE_S = 3.0
KITE_BOX = Box(0.25, 0.25, 0.5, 0.5)


@dataclasses.dataclass(frozen=True, slots=True)
class World:
    """The store and what the tests need to know about it."""

    db: Path
    video: Video
    kite: ObjectTrack
    scenes: tuple[Scene, ...]


def make_video(root: Path) -> Video:
    """Render the colour video into ``root`` and describe it as ingest would."""
    path = root / "colours.mp4"
    inputs = [arg for rgb in COLOURS for arg in
              ("-f", "lavfi", "-i", f"color=c=0x{bytes(rgb).hex()}:s=160x90:r=10:d={SCENE_S}")]
    ffmpeg(*inputs, "-filter_complex", "concat=n=6:v=1:a=0", "-c:v", "libx264",
           "-pix_fmt", "yuv420p", "-g", "10", str(path))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return Video(
        video_id=video_id_for(sha), sha256=sha, program="colours", source_path=str(path),
        stored_path=str(path), size_bytes=path.stat().st_size,
        media=MediaInfo(duration_s=6 * SCENE_S, fps=10.0, width=160, height=90,
                        video_codec="h264", n_frames=180),
        authorization=Authorization(rights_holder="Test", licence_id="CC0-1.0",
                                    scope=("benchmark",), valid_until=dt.date(2099, 1, 1)))


def make_representation(video: Video) -> tuple[Representation, ObjectTrack]:
    vid = video.video_id
    scenes = tuple(Scene(scene_id=scene_id_for(vid, k), video_id=vid, index=k,
                         start_s=k * SCENE_S, end_s=(k + 1) * SCENE_S, n_frames=30)
                   for k in range(6))
    kite = ObjectTrack(
        object_id=object_id_for(scenes[1].scene_id, 0), scene_id=scenes[1].scene_id, index=0,
        tag="kite", start_s=3.0, end_s=5.9, visible_s=2.9, mean_area_frac=0.25,
        mean_score=0.9, boxes=tuple(TimedBox(3.0 + 0.5 * k, KITE_BOX) for k in range(6)),
        attributes=ObjectAttributes(colour="magenta", position="centre", size_rank=1),
        referring_expression="the magenta kite", backend="embedded", model_version="det-1")
    rep = Representation(video_id=vid, scenes=scenes, tags=(), objects=(kite,),
                         scene_detector="content", config_hash="h")
    return rep, kite


def plan(mid: str, video: Video, pieces: list[tuple[int, float, float, int | None]]) -> Montage:
    """A montage of ``(scene index, src start, src end, needle index)`` pieces."""
    clock, segments = 0.0, []
    for position, (k, start, end, needle) in enumerate(pieces):
        segments.append(Segment(
            position=position, video_id=video.video_id,
            scene_id=scene_id_for(video.video_id, k), src_start_s=start, src_end_s=end,
            montage_start_s=clock, role="negative" if needle is None else "target",
            needle_index=needle))
        clock += end - start
    return Montage(montage_id=mid, bucket=bucket_for(clock), segments=tuple(segments), seed=1)


def montages(video: Video) -> list[Montage]:
    def whole(k: int, needle: int | None = None) -> tuple[int, float, float, int | None]:
        return (k, k * SCENE_S, (k + 1) * SCENE_S, needle)

    return [
        plan("m-obj", video, [whole(0), whole(1, 0), whole(2), whole(3)]),
        plan("m-scene", video, [whole(5), whole(4, 0), whole(0)]),
        plan("m-multi", video, [(4, 12.0, 13.5, 1), whole(2), (4, 13.5, 15.0, 0), whole(3)]),
    ]


def questions(video: Video, kite: ObjectTrack) -> list[Question]:
    orange = scene_id_for(video.video_id, 4)
    common = {"template_id": "t1", "backend": "embedded", "model_version": "writer-1"}
    return [
        Question(question_id="q-obj", montage_id="m-obj", needle_type="object",
                 target_scene_id=kite.scene_id, target_object_id=kite.object_id,
                 description="the magenta kite in the centre",
                 text="When does the magenta kite in the centre appear?", **common),
        Question(question_id="q-scene", montage_id="m-scene", needle_type="scene",
                 target_scene_id=orange, target_object_id=None,
                 description="A flat orange screen fills the whole frame.",
                 text="When is the whole frame a flat orange screen?", **common),
        Question(question_id="q-multi", montage_id="m-multi", needle_type="scene",
                 target_scene_id=orange, target_object_id=None,
                 description="A flat orange screen.",
                 text="When is the frame orange? Give every span.", **common),
    ]


def verdicts() -> list[Verification]:
    return [Verification("q-obj", "embedded", "ver-1", True, "kite unique to the target"),
            Verification("q-scene", "embedded", "ver-1", False, "orange also in negative 1")]


def make_world(root: Path) -> World:
    """Write the store of the module docstring under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    video = make_video(root)
    rep, kite = make_representation(video)
    db = root / "review.duckdb"
    with Store(db) as store:
        store.upsert_videos([video])
        store.record_representation(rep)
        store.record_generation(montages(video), questions(video, kite), verdicts())
    return World(db=db, video=video, kite=kite, scenes=rep.scenes)
