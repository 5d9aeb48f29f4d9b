"""Read-only output folders and a full disk: a clear error naming the path, the store intact.

Each stage runs in a forked child so its limits stay there. *Read-only*: the output folder is
``chmod 0555``; because root ignores file modes, the child drops to ``nobody`` first when the
tests run as root (the files it reads live in a world-readable folder). *Disk full*: the
child sets ``RLIMIT_FSIZE`` with ``SIGXFSZ`` ignored, so every write past the limit fails
with ``EFBIG`` exactly as on a full disk; ffmpeg children inherit both. The stages tried:
render (``stages.render.render_store``), VNBench (``build_vnbench``), the studio
(``build_studio``) and the DuckDB store itself. The error must be a project error naming the
folder or file, and the store must still open with the same rows.
"""

from __future__ import annotations

import codecs
import faulthandler
import gc
import itertools
import json
import multiprocessing
import os
import resource
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from ffmpeg import input as ffmpeg_input

from needleforge.errors import OutputError, StoreError
from needleforge.params import Params, RenderParams, StudioParams, VNBenchParams
from needleforge.records import IngestRejection, Representation, Scene, scene_id_for
from needleforge.stages.render import render_store
from needleforge.store import Store
from needleforge.studio import build_studio
from needleforge.vnbench import build_vnbench
from tests.badinputs.store_snapshot import snapshot
from tests.media.test_render_media import coded_source
from tests.stages.test_render_stage import CUTS_S, make_video, montage
from tests.vnbench.vnbench_cases import HistogramEmbedder

PROFILE = RenderParams(width=160, height=90, fps=25, workers=1)
NOBODY = 65534


#: Seconds a limited child may take (each stage here fails or ends in a few seconds alone).
CHILD_TIMEOUT_S = 240


def _child(conn: Connection, fn: Callable[[], object], fsize: int | None, drop: bool) -> None:
    gc.disable()  # see run_limited
    # A child that hangs prints its stack to the test's captured stderr first.
    faulthandler.dump_traceback_later(CHILD_TIMEOUT_S - 20, exit=False)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if fsize is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if drop and os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    try:
        fn()
    except BaseException as err:  # noqa: BLE001 - the child reports anything; the test judges
        conn.send((type(err).__name__, str(err)))
    else:
        conn.send(("ok", ""))


def run_limited(fn: Callable[[], object], *, fsize: int | None = None,
                read_only_user: bool = False) -> tuple[str, str]:
    """Run ``fn`` in a forked child under the limits; (exception class name, message).

    Codecs are looked up first: the interpreter's own files may be out of ``nobody``'s reach
    (a Python installed under root's home), and the child imports nothing new.

    The garbage is collected before the fork, and the child collects none: a pytest worker's
    earlier tests leave PyAV frames in unreachable cycles, and freeing one frees its
    swscale context, which waits for its slice threads; threads are not forked, so a child
    whose collector ran into one waited forever (seen in CI: a studio build that answers in
    about a second alone, stuck in ``pthread_cond_destroy`` under ``sws_freeContext``).
    """
    for name in ("utf-8-sig", "utf-16", "latin-1", "ascii"):
        codecs.lookup(name)
    gc.collect()
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, fsize, read_only_user))
    proc.start()
    child.close()
    try:
        if not parent.poll(CHILD_TIMEOUT_S):
            pytest.fail(f"the limited child did not answer in {CHILD_TIMEOUT_S} s (its "
                        "threads' stacks are in the captured stderr)")
        outcome: tuple[str, str] = parent.recv()
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join(30)
    return outcome


class _Cycle:
    """Holds itself and a decoded frame: garbage only the cyclic collector frees."""

    def __init__(self, frame: object) -> None:
        self.frame, self.me = frame, self


def test_a_child_forked_beside_decoded_frame_garbage_answers(tmp_path: Path) -> None:
    # Frames converted by PyAV, left in unreachable cycles as earlier tests leave them: a
    # forked child whose collector frees one waits for swscale threads never forked there.
    import av

    gc.disable()
    try:
        with av.open(str(coded_source(tmp_path / "v.mp4", fps=25, seconds=1))) as container:
            for frame in itertools.islice(container.decode(video=0), 3):
                frame.to_ndarray(format="rgb24")  # the frame keeps its swscale context
                _Cycle(frame)
    finally:
        gc.enable()
    assert run_limited(lambda: gc.collect()) == ("ok", "")


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[Path]:
    """A world-readable folder (``nobody`` must reach the inputs), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="nf-badout-"))
    base.chmod(0o755)
    yield base
    for path in [base, *base.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    shutil.rmtree(base)


def _read_only(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    return folder


def _render_db(world: Path) -> Path:
    """A store with one 20 s video, its three scenes and three montage plans."""
    video = make_video(coded_source(world / "src.mp4", fps=25, seconds=20))
    scenes = [Scene(scene_id=scene_id_for(video.video_id, i), video_id=video.video_id, index=i,
                    start_s=a, end_s=b, n_frames=round((b - a) * 25))
              for i, (a, b) in enumerate(itertools.pairwise(CUTS_S))]
    montages = [montage(f"m{k}", [(scenes[k], 0.0, 3.0), (scenes[(k + 1) % 3], 1.0, 2.0)])
                for k in range(3)]
    db = world / "db" / "nf.duckdb"
    with Store(db) as store:
        store.upsert_videos([video])
        store.record_representation(Representation(
            video_id=video.video_id, scenes=tuple(scenes), tags=(), objects=(),
            scene_detector="tests", config_hash="tests-tests"))
        store.record_generation(montages, [])
    for path in [db.parent, *db.parent.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return db


def _assert_error(outcome: tuple[str, str], kind: str, *names: str) -> None:
    got, message = outcome
    assert got == kind, outcome
    for name in names:
        assert name in message, (name, message)


def test_render_into_a_read_only_folder(world: Path) -> None:
    db = _render_db(world)
    before = snapshot(db)
    out = _read_only(world / "out")
    params = Params(render=PROFILE)
    outcome = run_limited(lambda: render_store(db=db, out=out, cache_dir=None, params=params),
                          read_only_user=True)
    _assert_error(outcome, OutputError.__name__, str(out))
    assert snapshot(db) == before
    assert not list(out.iterdir())


def test_render_onto_a_full_disk_leaves_no_partial_file(world: Path) -> None:
    db = _render_db(world)
    before = snapshot(db)
    out = world / "out"
    params = Params(render=PROFILE)
    outcome = run_limited(lambda: render_store(db=db, out=out, cache_dir=None, params=params),
                          fsize=3_000)
    _assert_error(outcome, OutputError.__name__, str(out), "too large")
    assert snapshot(db) == before
    leftovers = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".mp4", ".h264")]
    assert not leftovers, leftovers  # no truncated montage or clip was published


def test_vnbench_into_a_read_only_folder(world: Path) -> None:
    from tests.vnbench.vnbench_cases import lavfi_source, video_record

    source = video_record(lavfi_source(world / "hay.mp4", seconds=14))
    cache = world / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    out = _read_only(world / "out")
    # One subtitle-edit sample: the cheapest sample that still renders through the stage.
    params = VNBenchParams(seed=3, samples_per_subtask=1, tasks=["ret_edit1"],
                           min_haystack_s=10, max_haystack_s=12, builtin_images=False,
                           builtin_clips=False)
    render = RenderParams(width=320, height=180, fps=10, preset="veryfast", workers=1)
    outcome = run_limited(lambda: build_vnbench(
        videos=[source], params=params, out_dir=out, cache_dir=cache, render=render,
        embedder=HistogramEmbedder()), read_only_user=True)
    _assert_error(outcome, OutputError.__name__, str(out))
    assert not list(out.iterdir())


def test_studio_into_a_read_only_folder_and_onto_a_full_disk(world: Path) -> None:
    params = StudioParams(real_clips=["carphone"])
    out = _read_only(world / "studio")
    _assert_error(run_limited(lambda: build_studio(params, out), read_only_user=True),
                  OutputError.__name__, str(out), "permission denied")
    full = world / "full"
    _assert_error(run_limited(lambda: build_studio(params, full), fsize=4096),
                  OutputError.__name__, str(full), "file too large")
    assert not [p for p in full.rglob("*") if p.is_file() and p.suffix == ".mp4"]


def _rejections(n: int, *, start: int = 0) -> list[IngestRejection]:
    return [IngestRejection(rejection_id=f"r{i:05d}", manifest_path=os.urandom(800).hex(),
                            row=1 + i, source_path=f"s{i}.mp4", reason="expired",
                            detail=os.urandom(1200).hex()) for i in range(start, start + n)]


@pytest.mark.parametrize("limit", ["read-only", "disk-full"])
def test_store_write_fails_clearly_and_keeps_its_rows(world: Path, limit: str) -> None:
    db = world / "db" / "nf.duckdb"
    with Store(db) as store:
        store.upsert_rejections(_rejections(5))
    db.chmod(0o644)
    before = snapshot(db)

    def write() -> Any:
        with Store(db) as store:
            store.upsert_rejections(_rejections(500, start=5))

    if limit == "read-only":
        _read_only(db.parent)
        db.chmod(0o444)
        outcome = run_limited(write, read_only_user=True)
    else:
        outcome = run_limited(write, fsize=db.stat().st_size)
    _assert_error(outcome, StoreError.__name__, str(db))
    assert snapshot(db) == before
    with Store(db, read_only=True) as store:
        assert store.counts()["ingest_rejections"] == 5


@pytest.mark.parametrize("limit", ["read-only", "disk-full"])
def test_ingest_into_an_unwritable_media_store_stops_without_refusing_rows(
    world: Path, limit: str
) -> None:
    from needleforge.ingest import ingest
    from needleforge.params import IngestParams
    from tests.badinputs.corpus import licence
    from tests.evaluate.eval_media import make_bars_clip

    make_bars_clip(world / "a.mp4")
    (world / "m.yaml").write_text(json.dumps({"sources": [{"path": "a.mp4", **licence()}]}))
    media = world / "media"
    params = IngestParams(link_mode="copy")
    db = world / "db" / "nf.duckdb"
    with Store(db) as store:
        store.upsert_rejections(_rejections(2))
    before = snapshot(db)

    def run() -> None:
        result = ingest(world / "m.yaml", media_dir=media, params=params)
        with Store(db) as store:  # only reached when ingest wrongly succeeds
            store.record_ingest(result.videos, result.rejections)

    if limit == "read-only":
        _read_only(media)
        outcome = run_limited(run, read_only_user=True)
    else:
        outcome = run_limited(run, fsize=1_000)
    _assert_error(outcome, OutputError.__name__, str(media), "row 1 (a.mp4)")
    assert snapshot(db) == before
    assert not [p for p in media.rglob("*") if p.is_file()]


def test_ffmpeg_that_cannot_open_its_output_names_the_folder(world: Path) -> None:
    from needleforge.media.join import encode_piece

    out = _read_only(world / "pieces")
    stream = ffmpeg_input("testsrc2=size=160x90:rate=25", format="lavfi")
    outcome = run_limited(lambda: encode_piece(out / "p.h264", profile=PROFILE, stream=stream,
                                               duration_s=1.0), read_only_user=True)
    # "Permission denied": the words every ffmpeg since the floor (5.1) prints for it.
    _assert_error(outcome, OutputError.__name__, str(out), "Permission denied")


@pytest.mark.parametrize("limit", ["read-only", "disk-full"])
def test_atomic_write_that_fails_keeps_the_previous_file(world: Path, limit: str) -> None:
    from needleforge.media.outputs import write_text_atomic

    folder = world / "out"
    target = write_text_atomic(folder / "questions.jsonl", '{"v": 1}\n')
    new = '{"v": 2}\n' * 2000

    def rewrite() -> None:
        write_text_atomic(target, new, what="questions")

    if limit == "read-only":
        _read_only(folder)
        outcome = run_limited(rewrite, read_only_user=True)
    else:
        outcome = run_limited(rewrite, fsize=1_000)
    _assert_error(outcome, OutputError.__name__, "questions: cannot write", str(folder))
    assert target.read_text() == '{"v": 1}\n'
    assert sorted(p.name for p in folder.iterdir()) == ["questions.jsonl"]


def test_copy_errors_name_the_destination_not_the_source(tmp_path: Path) -> None:
    from needleforge.media.outputs import output_error

    err = OSError(27, "File too large", "/src/in.mp4", None, "/out/copy.mp4")
    message = str(output_error(err, what="studio", path=tmp_path))
    assert message == "studio: cannot write /out/copy.mp4: file too large (disk full or " \
                      "file-size limit reached)"
