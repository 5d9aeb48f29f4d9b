"""The render stage: plans of stored scenes → mp4 files, reusing the scene-clip cache.

Source: a 20 s frame-numbered video (see :func:`tests.media.test_render_media.coded_source`)
cut into three scenes at 6.0 s and 13.4 s, as the scenes stage would store them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import itertools
import json
from pathlib import Path

import pytest

from needleforge.errors import MediaError
from needleforge.media import probe
from needleforge.params import RenderParams
from needleforge.records import (
    Authorization,
    Montage,
    Scene,
    Segment,
    Video,
    scene_id_for,
    video_id_for,
)
from needleforge.stages.render import render_montages
from tests.media.test_render_media import coded_source, frame_codes

PARAMS = RenderParams(width=160, height=90, fps=25, workers=2)
CUTS_S = (0.0, 6.0, 13.4, 20.0)


@dataclasses.dataclass
class Corpus:
    video: Video
    scenes: dict[str, Scene]
    root: Path

    def scene(self, index: int) -> Scene:
        return self.scenes[scene_id_for(self.video.video_id, index)]

    def run(self, montages: list[Montage], **changes: object):  # type: ignore[no-untyped-def]
        kwargs: dict[str, object] = {
            "scenes_by_id": self.scenes, "videos_by_id": {self.video.video_id: self.video},
            "out_dir": self.root / "out", "cache_dir": self.root / "cache", "params": PARAMS,
        }
        kwargs.update(changes)
        return render_montages(montages, **kwargs)  # type: ignore[arg-type]


def make_video(path: Path) -> Video:
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    auth = Authorization(rights_holder="tests", licence_id="test-1.0", scope=("benchmark",),
                         valid_until=dt.date(2099, 1, 1))
    return Video(video_id=video_id_for(sha), sha256=sha, program="tests",
                 source_path=str(path), stored_path=str(path), size_bytes=len(data),
                 media=probe(path), authorization=auth)


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    video = make_video(coded_source(tmp_path / "src.mp4", fps=25, seconds=20))
    scenes = {}
    for i, (start, end) in enumerate(itertools.pairwise(CUTS_S)):
        scene = Scene(scene_id=scene_id_for(video.video_id, i), video_id=video.video_id,
                      index=i, start_s=start, end_s=end, n_frames=round((end - start) * 25))
        scenes[scene.scene_id] = scene
    return Corpus(video=video, scenes=scenes, root=tmp_path)


def montage(montage_id: str, parts: list[tuple[Scene, float, float]]) -> Montage:
    """A montage of ``(scene, offset into it, duration)`` parts; the first is the target."""
    segments, clock = [], 0.0
    for i, (scene, offset_s, duration_s) in enumerate(parts):
        start = scene.start_s + offset_s
        segments.append(Segment(position=i, video_id=scene.video_id, scene_id=scene.scene_id,
                                src_start_s=start, src_end_s=start + duration_s,
                                montage_start_s=clock, role="target" if i == 0 else "negative",
                                needle_index=0 if i == 0 else None))
        clock += duration_s
    return Montage(montage_id=montage_id, bucket="short", segments=tuple(segments), seed=0)


def test_renders_reuses_and_skips(corpus: Corpus) -> None:
    s0, s1, s2 = corpus.scene(0), corpus.scene(1), corpus.scene(2)
    first = montage("m-a", [(s1, 2.0, 3.0), (s0, 0.0, 2.0), (s2, 1.0, 5.6)])
    second = montage("m-b", [(s2, 0.0, 2.0), (s1, 0.0, 7.4)])
    report = corpus.run([first, second])
    assert (report.cache_misses, report.cache_hits) == (3, 0)
    a, b = report.montages
    assert (a.cache_misses, a.cache_hits, b.cache_misses, b.cache_hits) == (3, 0, 0, 2)
    assert a.encode_cpu_s > 0 and b.encode_cpu_s == 0 and report.encode_cpu_s == a.encode_cpu_s
    assert a.path == corpus.root / "out" / "m-a.mp4"
    assert abs(a.duration_s - first.duration_s) <= 1 / 25 and a.n_frames == 265
    codes = frame_codes(a.path)
    # Planned montage time t shows source time src_start + (t - montage_start).
    for seg in first.segments:
        k = round(seg.montage_start_s * 25)
        assert codes[k] == round(seg.src_start_s * 25), seg
    assert codes[-1] == round((13.4 + 1.0 + 5.6) * 25) - 1
    sidecar = json.loads(a.path.with_suffix(".json").read_text())
    assert sidecar["montage_id"] == "m-a" and len(sidecar["plan_hash"]) == 64
    # Same plans again: nothing to do.
    rerun = corpus.run([first, second])
    assert all(m.skipped for m in rerun.montages) and rerun.cpu_s == 0
    # Rendered again from the cache alone: no encode, and the same bytes.
    before = a.path.read_bytes()
    a.path.unlink()
    redo = corpus.run([first])
    assert (redo.cache_hits, redo.cache_misses, redo.encode_cpu_s) == (3, 0, 0.0)
    assert not redo.montages[0].skipped and a.path.read_bytes() == before
    # A changed plan under the same id is rendered again.
    changed = corpus.run([montage("m-b", [(s2, 0.0, 3.0), (s1, 0.0, 7.4)])])
    assert not changed.montages[0].skipped and changed.montages[0].n_frames == 260


def test_segment_crossing_its_scene_end_is_refused(corpus: Corpus) -> None:
    crossing = montage("m-cross", [(corpus.scene(0), 4.0, 3.0)])  # 4..7 s, scene ends at 6
    with pytest.raises(MediaError, match=r"montage m-cross, segment 0: \[4\.0, 7\.0\) crosses "
                                         r"the bounds of scene .*-s0000 \[0\.0, 6\.0\)"):
        corpus.run([crossing])
    assert not (corpus.root / "cache").exists()  # checked before anything was encoded


def test_segment_off_a_whole_second_is_refused(corpus: Corpus) -> None:
    off = montage("m-off", [(corpus.scene(1), 1.5, 2.0)])
    with pytest.raises(MediaError, match=r"m-off, segment 0: starts 1\.500 s into scene "
                                         r".*-s0001.*whole number of seconds"):
        corpus.run([off])


def test_vanished_source_names_video_and_path(corpus: Corpus) -> None:
    Path(corpus.video.stored_path).unlink()
    with pytest.raises(MediaError) as err:
        corpus.run([montage("m-gone", [(corpus.scene(0), 0.0, 2.0)])])
    assert corpus.video.video_id in str(err.value)
    assert corpus.video.stored_path in str(err.value)


def test_counts_each_clip_and_montage_as_it_finishes(corpus: Corpus) -> None:
    s0, s1, s2 = corpus.scene(0), corpus.scene(1), corpus.scene(2)
    plans = [montage("m-a", [(s1, 2.0, 3.0), (s0, 0.0, 2.0)]),
             montage("m-b", [(s2, 0.0, 2.0), (s1, 0.0, 7.4)])]
    seen: list[tuple[int, int]] = []
    corpus.run(plans, on_step=lambda done, total: seen.append((done, total)))
    assert seen == [(done, 5) for done in range(1, 6)]  # 3 scene clips, 2 montages
    again: list[tuple[int, int]] = []
    corpus.run(plans, on_step=lambda done, total: again.append((done, total)))
    assert again == []  # both current: nothing to do, nothing counted
