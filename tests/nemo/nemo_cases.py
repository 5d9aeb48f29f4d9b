"""Hand-built representation tables for the NeMo tests.

Every record is made here, not by the represent stage, so each test states exactly which
scene holds which tag and object. ``corpus()`` is the shared small video: one clear cat
scene, one scene needle candidate, enough tag-disjoint negatives, and near-miss scenes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from needleforge.params import NemoParams
from needleforge.records import (
    Authorization,
    Box,
    MediaInfo,
    ObjectAttributes,
    ObjectTrack,
    Scene,
    SceneTag,
    TimedBox,
    Video,
    object_id_for,
    scene_id_for,
    video_id_for,
)

SHA = "a" * 64
VID = video_id_for(SHA)


def photo(filename: str) -> Image.Image:
    """A photo scikit-image ships (``chelsea.png``, ``gravel.png``…), opened with PIL."""
    spec = importlib.util.find_spec("skimage")
    assert spec is not None and spec.submodule_search_locations
    return Image.open(Path(next(iter(spec.submodule_search_locations))) / "data" / filename)


def backdrop(filename: str) -> Image.Image:
    """A 640x360 RGB frame cut from a scikit-image photo (stretched square, top part)."""
    with photo(filename) as img:
        return img.convert("RGB").resize((640, 640)).crop((0, 0, 640, 360))


def chelsea() -> Image.Image:
    """Chelsea the cat's head and body (the studio's ``cat`` cut-out)."""
    with photo("chelsea.png") as img:
        return img.convert("RGB").crop((30, 0, 400, 300))


def make_video(sha: str = SHA, *, duration_s: float = 600.0) -> Video:
    """An authorized video record; only its id matters to generation."""
    return Video(
        video_id=video_id_for(sha), sha256=sha, program="p", source_path="/s.mp4",
        stored_path="/m.mp4", size_bytes=10,
        media=MediaInfo(duration_s=duration_s, fps=25.0, width=64, height=64,
                        video_codec="h264", n_frames=int(duration_s * 25)),
        authorization=Authorization(rights_holder="R", licence_id="L", scope=("benchmark",),
                                    valid_until=dt.date(2099, 1, 1)),
    )


def make_scene(index: int, start_s: float, end_s: float, *, video_id: str = VID,
               subtitle: str = "") -> Scene:
    return Scene(scene_id=scene_id_for(video_id, index), video_id=video_id, index=index,
                 start_s=start_s, end_s=end_s, n_frames=max(1, int((end_s - start_s) * 25)),
                 subtitle_text=subtitle)


def tile(durations: Sequence[float], *, video_id: str = VID, start_s: float = 0.0
         ) -> list[Scene]:
    """Scenes of the given durations, back to back from ``start_s``."""
    scenes, clock = [], start_s
    for i, d in enumerate(durations):
        scenes.append(make_scene(i, clock, clock + d, video_id=video_id))
        clock += d
    return scenes


def make_tag(scene: Scene, name: str, score: float = 0.9) -> SceneTag:
    return SceneTag(scene.scene_id, name, score, "test", "1")


def make_track(scene: Scene, index: int, label: str, *, start: float | None = None,
               end: float | None = None, visible: float | None = None, area: float = 0.1,
               colour: str = "white", position: str = "centre", size_rank: int = 1,
               expression: str | None = None) -> ObjectTrack:
    """A track inside ``scene`` (whole scene by default), visible all its span by default."""
    start = scene.start_s if start is None else start
    end = scene.end_s if end is None else end
    words = ["the", colour, label] if colour else ["the", label]
    return ObjectTrack(
        object_id=object_id_for(scene.scene_id, index), scene_id=scene.scene_id, index=index,
        tag=label, start_s=start, end_s=end,
        visible_s=end - start if visible is None else visible, mean_area_frac=area,
        mean_score=0.8, boxes=(TimedBox(start, Box(0.1, 0.1, 0.3, 0.3)),),
        attributes=ObjectAttributes(colour=colour, position=position, size_rank=size_rank),
        referring_expression=expression or " ".join(words), backend="test",
        model_version="1",
    )


#: The NeMo paper's target thresholds (seed 001, App. D.2), which these fixtures were built
#: around; the defaults are lower for broadcast pacing (see NemoParams).
PAPER_TARGETS: dict[str, Any] = {"min_scene_s": 5.0, "min_visible_s": 4.0, "min_scene_tags": 2}


def params(**overrides: Any) -> NemoParams:
    return NemoParams(**(PAPER_TARGETS | overrides))


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A video's tables: ``cat`` is the object target scene, ``kitchen`` a scene target."""

    video: Video
    scenes: list[Scene]
    tags: list[SceneTag]
    objects: list[ObjectTrack]

    def scene(self, index: int) -> Scene:
        return self.scenes[index]

    def kwargs(self) -> dict[str, Any]:
        return {"videos": [self.video], "scenes": self.scenes, "tags": self.tags,
                "objects": self.objects}


def corpus() -> Corpus:
    """12 scenes of one video.

    s0 (8 s): a white cat (2.3–7.9 s visible 5.6 s, 10 % area) on a sofa → object + scene
    targets. s1 (9 s): a kitchen with a red cup (too small: 3 %) → scene target only.
    s2 (4.9 s): a dog scene just too short. s3..s11: street/park/car scenes of 5–10 s that
    hold no cat, sofa, living room or kitchen; s6 is a 0.5 s flash (too short a negative).
    """
    durations = [8.0, 9.0, 4.9, 6.0, 7.5, 10.0, 0.5, 5.0, 8.0, 6.5, 9.5, 7.0]
    scenes = tile(durations, start_s=0.4)
    s = scenes
    tags = [
        make_tag(s[0], "cat", 0.95), make_tag(s[0], "sofa", 0.8),
        make_tag(s[0], "living room", 0.7), make_tag(s[0], "lamp", 0.3),
        make_tag(s[1], "kitchen", 0.9), make_tag(s[1], "cup", 0.6),
        make_tag(s[1], "table", 0.5),
        make_tag(s[2], "dog", 0.9), make_tag(s[2], "grass", 0.8),
    ]
    outdoor = ["street", "car", "tree", "park", "bicycle", "bench"]
    for i, scene in enumerate(s[3:], start=3):
        tags.append(make_tag(scene, outdoor[i % len(outdoor)], 0.8))
        tags.append(make_tag(scene, outdoor[(i + 2) % len(outdoor)], 0.6))
    objects = [
        make_track(s[0], 0, "cat", start=s[0].start_s + 2.3, end=s[0].start_s + 7.9,
                   visible=5.6, area=0.10, colour="white", position="left",
                   expression="the cat"),
        make_track(s[1], 0, "cup", area=0.03, colour="red", expression="the red cup"),
        make_track(s[2], 0, "dog", area=0.2, colour="brown", expression="the dog"),
        make_track(s[4], 0, "car", area=0.2, colour="blue", expression="the blue car"),
    ]
    return Corpus(make_video(), scenes, tags, objects)


def stored_corpus(root: Path, *, name: str = "video.mp4") -> Path:
    """:func:`corpus` stored over a real video file: ``root/name`` (85 s of ffmpeg's testsrc2
    at 64x36, 5 fps) as its media, the tables as its representation; returns the DuckDB file
    (``root/nf.duckdb``). For tests that decode frames (the negative check, a real server)."""
    from needleforge.media.probe import probe
    from needleforge.records import Representation
    from needleforge.store import Store
    from tests.conftest import ffmpeg

    path = root / name
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x36:rate=5:duration=85",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path))
    case = corpus()
    video = dataclasses.replace(case.video, source_path=str(path), stored_path=str(path),
                                media=probe(path))
    db = root / "nf.duckdb"
    with Store(db) as store:
        store.upsert_videos([video])
        store.record_representation(Representation(
            video_id=video.video_id, scenes=tuple(case.scenes), tags=tuple(case.tags),
            objects=tuple(case.objects), scene_detector="tests", config_hash="tests-tests"))
    return db
