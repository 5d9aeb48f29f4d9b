"""Bad and odd videos and subtitle sidecars through ``stages.represent.represent_store`` (scenes
step).

Each case (``corpus.REPRESENT_CASES``) ingests the case's video beside a good one, then
represents the store. A malformed sidecar must fail that video alone, with an error naming
the sidecar file and line, and leave no scene rows of it; a truncated video keeps the scenes
before the break and records why; odd sizes, variable frame rate and rotation are
represented. The good video is always represented, and every row stored before survives.
Subtitle text with quotes, colons, backslashes, percent signs, newlines, emoji and CJK must
reach the store exactly, and still draw through ffmpeg's drawtext (VNBench edit needles).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from needleforge.ingest import ingest
from needleforge.media.cache import ClipSpec, SceneClipCache
from needleforge.params import IngestParams, Params
from needleforge.records import Representation, TagScore
from needleforge.stages.represent import RepresentFailure, RepresentJob, represent_store, run_job
from needleforge.stages.represent_video import Models
from needleforge.store import Store
from needleforge.vnbench.clip_seconds import decode_file
from needleforge.vnbench.records import Needle
from needleforge.vnbench.sample_render import edit_piece
from needleforge.vnbench.text import TextStyle, default_font_path
from tests.badinputs.corpus import GOOD, GOOD2, REPRESENT_CASES, TRICKY_LINES, RepresentCase
from tests.badinputs.corpus import licence as licence_fields
from tests.badinputs.store_snapshot import assert_kept, snapshot
from tests.vnbench.vnbench_cases import PROFILE

PARAMS = Params()


def _ingested(corpus: Path, db: Path, rows: list[dict[str, object]], tag: str) -> None:
    manifest = corpus / f"represent-{tag}.yaml"
    manifest.write_text(yaml.safe_dump(
        {"sources": [{**licence_fields(), **r} for r in rows]}, sort_keys=False))
    result = ingest(manifest, media_dir=db.parent / "media", params=IngestParams())
    assert not result.rejections, result.rejections
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)


@pytest.mark.parametrize("case", REPRESENT_CASES, ids=[c.id for c in REPRESENT_CASES])
def test_each_video_is_represented_or_fails_by_name(
    case: RepresentCase, corpus: Path, tmp_path: Path
) -> None:
    db = tmp_path / "nf.duckdb"
    row: dict[str, object] = {"path": case.path}
    if case.subtitles:
        row["subtitles"] = case.subtitles
    _ingested(corpus, db, [{"path": GOOD2}, row], f"{case.id}-{tmp_path.name}")
    before = snapshot(db)
    outcome = represent_store(db=db, params=PARAMS, step="scenes")
    assert_kept(before, snapshot(db))
    with Store(db, read_only=True) as store:
        ids = {Path(v.source_path).name: v.video_id for v in store.videos()}
        scenes = {name: store.scenes(vid) for name, vid in ids.items()}
        errors = dict(store.query("SELECT video_id, decode_error FROM representations"))
    assert scenes[GOOD2], "the good video must be represented whatever the other does"
    mine = ids[case.path]
    if case.fails:
        (failure,) = outcome.failures
        assert failure.video_id == mine and case.path in failure.error
        for text in case.says:
            assert text in failure.error, (text, failure.error)
        assert not scenes[case.path] and mine not in errors  # nothing half-written
        return
    assert not outcome.failures, outcome.failures
    got = scenes[case.path]
    assert got and got[0].start_s == 0.0
    assert all(a.end_s == pytest.approx(b.start_s) for a, b in itertools.pairwise(got))
    assert bool(errors[mine]) is case.decode_error, errors[mine]
    if case.subtitles == "tricky.srt":
        text = "\n".join(s.subtitle_text for s in got)
        assert text == f"{TRICKY_LINES[0]}\n{TRICKY_LINES[1]}\nsecond line"
    if case.subtitles == "huge.srt":
        text = "\n".join(s.subtitle_text for s in got)
        assert "w0\n" in text and "w39999" in text and "x" * 200_000 in text


def test_stored_tricky_subtitles_draw_through_ffmpeg(corpus: Path, tmp_path: Path) -> None:
    """The exact stored text, used as VNBench edit needles, renders every line it holds."""
    db = tmp_path / "nf.duckdb"
    _ingested(corpus, db, [{"path": GOOD, "subtitles": "tricky.srt"}], f"draw-{tmp_path.name}")
    counts: list[tuple[int, int]] = []
    represent_store(db=db, params=PARAMS, step="scenes",
                    on_video=lambda done, total: counts.append((done, total)))
    assert counts == [(0, 1), (1, 1)]  # the total is known before the first video ends
    with Store(db, read_only=True) as store:
        texts = [s.subtitle_text for s in store.scenes() if s.subtitle_text]
    assert texts
    # A black haystack: every lit pixel of an edited second is drawn text.
    source = tmp_path / "black.mp4"
    from tests.conftest import ffmpeg

    ffmpeg("-f", "lavfi", "-i", "color=c=black:size=320x180:rate=10:duration=2",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(source))
    clip = SceneClipCache(tmp_path / "cache", profile=PROFILE).ensure(
        ClipSpec(source, 0, 2)).path
    work = tmp_path / "it's: a [dir], 100%"
    work.mkdir()
    needles = [Needle(kind="subtitle", method="edit", label="t", haystack_s=0, start_s=0.0,
                      end_s=1.0, text=texts[0])]
    style = TextStyle(font_path=default_font_path(), size_frac=0.1)
    piece = edit_piece(clip, edits=needles, out=work / "edits.h264", profile=PROFILE,
                       style=style, work=work)
    frames = decode_file(piece.path)
    assert len(frames) == PROFILE.fps
    rows = (frames[PROFILE.fps // 2].max(axis=2) > 60).any(axis=1)
    # Each text line is a band of lit rows; a newline read as "n" or text cut at a quote
    # would leave fewer bands than lines.
    bands = int(rows[0]) + int(np.count_nonzero(rows[1:] & ~rows[:-1]))
    assert bands == texts[0].count("\n") + 1, (bands, texts[0])


# -- a model backend answering garbage ------------------------------------------------------

class _Backend:
    """A detector and tagger whose answer is scripted: ``answer()`` is what they return."""

    name = "scripted"
    version = "0"

    def __init__(self, answer: Callable[[], object]) -> None:
        self.answer = answer

    def detect(self, image: object, *, t_s: float) -> object:
        return self.answer()

    def tag(self, image: object) -> object:
        return self.answer()


def _nan_tag() -> object:
    return [TagScore("cat", float("nan"))]


GARBAGE = {
    "detector-returns-none": ("detector", lambda: None, "returned garbage (NoneType)"),
    "detector-returns-dicts": ("detector", lambda: [{"label": "cat"}], "['dict']"),
    "tagger-returns-text": ("tagger", lambda: "cat, dog", "returned garbage (str)"),
    "tagger-nan-score": ("tagger", _nan_tag, "score = nan not in [0, 1]"),
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_from_a_backend_fails_that_video_by_name(
    case: str, corpus: Path, tmp_path: Path
) -> None:
    family, answer, says = GARBAGE[case]
    db = tmp_path / "nf.duckdb"
    _ingested(corpus, db, [{"path": GOOD}, {"path": GOOD2}], f"garbage-{case}-{tmp_path.name}")
    sane = _Backend(lambda: [TagScore("thing", 0.9)] if family == "detector" else [])
    bad = _Backend(answer)
    garbage = Models(detector=bad if family == "detector" else _Backend(lambda: []),
                     tagger=bad if family == "tagger" else sane)  # type: ignore[arg-type]
    good = Models(detector=_Backend(lambda: []), tagger=_Backend(lambda: []))  # type: ignore[arg-type]
    before = snapshot(db)
    with Store(db) as store:
        videos = {Path(v.source_path).name: v for v in store.videos()}
        outcomes = [run_job(RepresentJob(videos[GOOD]), scene_params=PARAMS.scenes,
                            object_params=PARAMS.objects, models=garbage),
                    run_job(RepresentJob(videos[GOOD2]), scene_params=PARAMS.scenes,
                            object_params=PARAMS.objects, models=good)]
        for outcome in outcomes:  # what represent_store does with each
            if isinstance(outcome, Representation):
                store.record_representation(outcome)
    failure, done = outcomes
    assert isinstance(failure, RepresentFailure), failure
    for text in (GOOD, "backend scripted@0 on scene", says):
        assert text in failure.error, (text, failure.error)
    assert isinstance(done, Representation) and done.scenes
    after = snapshot(db)
    assert_kept(before, after)
    with Store(db, read_only=True) as store:
        assert not store.scenes(videos[GOOD].video_id)  # nothing of the failed video stored
        assert store.scenes(videos[GOOD2].video_id)
