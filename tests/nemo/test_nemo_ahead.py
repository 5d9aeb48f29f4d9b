"""Stage 2 with its work done ahead on worker threads gives exactly the serial result.

Fake models here (a detector that reads a scene's number off its painted pixels), so the
tests are fast and say what each part guarantees: worker models are per thread, results are
taken in the order the serial code asks, a worker's failure is raised where the serial code
would raise it, and the verifier's eyes use a worker's detections only for the very picture
they were computed on. ``test_nemo_ahead_e2e.py`` runs the real models on real videos.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from nemo_cases import backdrop, chelsea, corpus, params

from needleforge.backends.base import Keyframe, RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.backends.embedded.eyes import Eyes
from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.errors import MediaError
from needleforge.nemo import GenerationResult, TiledProbe, generate
from needleforge.nemo.ahead import Workers, default_workers
from needleforge.records import Box, Detection, Scene, SceneScan

MAIN = threading.get_ident()
#: The module (``needleforge.nemo.generate`` is also the name of its function).
generate_module = importlib.import_module("needleforge.nemo.generate")


class _Painted:
    """A detector that sees a cat in frames painted with a multiple of 3, a dog otherwise;
    logs the thread of every call."""

    name, version = "painted", "1"

    def __init__(self, log: list[int]) -> None:
        self.log = log

    def detect(self, image: RGBImage, *, t_s: float) -> list[Detection]:
        self.log.append(threading.get_ident())
        value = int(image[0, 0, 0])
        return [Detection(t_s=t_s, label="cat" if value % 3 == 0 else "dog",
                          score=0.4 + value / 1000, box=Box(0.1, 0.1, 0.2, 0.2))]


class _Frames:
    """Two frames per scene painted with its index; ``broken`` scene indices raise like a
    vanished video file."""

    def __init__(self, broken: frozenset[int] = frozenset()) -> None:
        self.broken, self.calls = broken, 0

    def __call__(self, scene: Scene) -> Sequence[Keyframe]:
        self.calls += 1
        if scene.index in self.broken:
            raise MediaError(f"video {scene.video_id}: file /gone.mp4 has vanished")
        return tuple(Keyframe(scene.start_s + dt, np.full((36, 64, 3), scene.index, np.uint8))
                     for dt in (0.2, 0.4))


def _probe(log: list[int], frames: _Frames, *, worker_log: list[int] | None = None,
           broken: frozenset[int] = frozenset()) -> TiledProbe:
    """A probe whose workers get their own detector and frame source."""
    def worker() -> TiledProbe:
        return TiledProbe(_Painted(worker_log if worker_log is not None else log),
                          _Frames(broken), cols=1, rows=1, overlap=0.0, min_score=0.3)
    return TiledProbe(_Painted(log), frames, cols=1, rows=1, overlap=0.0, min_score=0.3,
                      worker=worker)


def _generate(probe: TiledProbe, workers: int) -> tuple[GenerationResult, list[SceneScan]]:
    c = corpus()
    result = generate(**c.kwargs(), params=params(), describer=EmbeddedDescriber(),
                      verifier=EmbeddedVerifier(), probe=probe, workers=workers)
    return result, probe.new_scans()


def test_workers_give_each_thread_its_own_model_and_close_them() -> None:
    made: list[int] = []
    closed: list[int] = []

    class Model:
        def __init__(self) -> None:
            made.append(threading.get_ident())

        def close(self) -> None:
            closed.append(1)

    with Workers(2) as workers:
        threads = [workers.submit(Model, lambda m: (id(m), threading.get_ident()))
                   for _ in range(40)]
        seen = [f.result() for f in threads]
        failed = workers.submit(Model, lambda m: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failed.result()
    models = {model: thread for model, thread in seen}
    assert len(models) == len(set(models.values())) <= 2  # one model per thread
    assert set(models.values()) <= set(made) and len(made) == len(set(made)) <= 2
    assert MAIN not in made and len(closed) == len(made)
    with pytest.raises(RuntimeError, match="after close"):
        workers.submit(Model, lambda m: 0)
    with pytest.raises(ValueError, match="count"):
        Workers(0)


def test_worker_count_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDLEFORGE_NEMO_WORKERS", "3")
    assert default_workers() == 3
    monkeypatch.setenv("NEEDLEFORGE_NEMO_WORKERS", "two")
    with pytest.raises(ValueError, match="NEEDLEFORGE_NEMO_WORKERS"):
        default_workers()


@pytest.mark.parametrize("plan_ahead", [1, 32])  # verdicts 1 target behind, or all at the end
def test_scans_made_ahead_give_the_serial_result_in_the_serial_order(
        plan_ahead: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate_module, "PLAN_AHEAD", plan_ahead)
    serial_log: list[int] = []
    serial, serial_scans = _generate(_probe(serial_log, _Frames()), workers=0)
    main_log: list[int] = []
    worker_log: list[int] = []
    frames = _Frames()
    ahead, ahead_scans = _generate(_probe(main_log, frames, worker_log=worker_log), workers=2)
    assert serial.rejected_negatives  # the painted cats (scenes 3, 6, 9) were passed over
    assert ahead == serial
    assert ahead_scans == serial_scans  # the same scans, stored in the order planning asked
    assert set(serial_log) == {MAIN}
    # every scan came from a worker: the main probe neither decoded nor detected
    assert main_log == [] and frames.calls == 0 and MAIN not in worker_log


def test_a_failing_worker_raises_where_the_serial_run_does() -> None:
    broken = frozenset({4})
    errors, scans = [], []
    for workers in (0, 2):
        probe = _probe([], _Frames(broken), broken=broken)
        with pytest.raises(MediaError, match="vanished") as caught:
            _generate(probe, workers=workers)
        errors.append(str(caught.value))
        scans.append(probe.new_scans())  # what the pipeline stores after a failure
        assert probe.drop_ahead() == 0  # nothing left queued
    assert errors[0] == errors[1]
    assert scans[0] == scans[1] and scans[0]


def test_scans_already_stored_are_not_looked_for_again() -> None:
    first, _ = _generate(_probe([], _Frames()), workers=0)
    done = _probe([], _Frames())
    assert _generate(done, workers=0)[0] == first
    known = done.new_scans()
    log: list[int] = []
    again = _probe(log, _Frames(), worker_log=log)
    again.preload(known)
    with Workers(1) as workers:
        assert again.look_ahead(corpus().scenes, workers) == len(corpus().scenes) - len(known)
        assert again.drop_ahead() == len(corpus().scenes) - len(known)


def test_eyes_take_a_workers_detections_only_for_the_same_picture(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[int] = []
    eyes = Eyes()
    monkeypatch.setattr(eyes, "_new_detector", lambda threads: _Painted(log))
    frames = [Keyframe(1.0, np.full((36, 64, 3), 3, np.uint8)),
              Keyframe(2.0, np.full((36, 64, 3), 4, np.uint8))]
    with Workers(2) as workers:
        assert eyes.look_ahead("s1", frames, workers.submit) == 2
        assert eyes.look_ahead("s1", frames, workers.submit) == 0  # queued once
        detect = eyes.detections("s1")
        assert detect(frames[0])[0].label == "cat" and detect(frames[1])[0].label == "dog"
        assert MAIN not in log and len(log) == 2
        # same scene, time and shape, other pixels: looked at here, not taken from the job
        other = Keyframe(3.0, np.full((36, 64, 3), 5, np.uint8))
        eyes.look_ahead("s1", [other], workers.submit)
        repainted = Keyframe(3.0, np.full((36, 64, 3), 6, np.uint8))
        assert detect(repainted)[0].label == "cat" and log.count(MAIN) == 1
        eyes.look_ahead("s2", frames[:1], workers.submit)
    assert eyes.drop_ahead() == 1  # asked for by no verdict
    assert eyes.detections("s2")(frames[0])[0].label == "cat"  # computed here after all



def test_a_frames_detections_do_not_depend_on_the_frames_before() -> None:
    """What a worker's detector sees first depends on thread timing, so the detections of a
    frame must not depend on what it saw before. OpenCV keeps the prior boxes of the first
    input size a net sees (a 768x432 frame after a 960x540 one came out with shifted boxes):
    the detector takes a fresh net when the size changes."""
    frame = backdrop("gravel.png")
    frame.paste(chelsea().resize((80, 65)), (400, 120))
    big, small = np.asarray(frame), np.asarray(frame.resize((512, 288)))
    fresh = {id(image): EmbeddedDetector(score_threshold=0.3, input_scale=1.5,
                                         num_threads=1).detect(image, t_s=1.0)
             for image in (big, small)}
    seen = EmbeddedDetector(score_threshold=0.3, input_scale=1.5, num_threads=1)
    for image in (big, small, big, small):
        assert seen.detect(image, t_s=1.0) == fresh[id(image)]
    assert any(d.label == "cat" for d in fresh[id(big)] + fresh[id(small)])
