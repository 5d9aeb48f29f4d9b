"""Scenes' model work on a pool (``stages.represent.SceneModelPool``): the video's result is the
one its own thread makes, whatever order the scenes finish in and however far ahead it runs.

Source: four 2 s shots of package photos (a cat, a person, coffee, a rocket), hard cuts,
640x360 at 10 fps, so the embedded detector and tagger have something to find in each scene.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import skimage

from needleforge.backends import default_registry
from needleforge.errors import BackendError
from needleforge.params import ObjectParams, SceneParams
from needleforge.records import Video
from needleforge.stages import represent_video as rv
from needleforge.stages.represent import SceneModelPool, worker_models
from needleforge.stages.represent_video import Models, represent_video
from tests.conftest import ffmpeg
from tests.stages.test_render_stage import make_video

PHOTOS = Path(skimage.__file__).parent / "data"
SHOTS = ("chelsea.png", "astronaut.png", "coffee.png", "rocket.jpg")


@pytest.fixture(scope="module")
def four_shots(tmp_path_factory: pytest.TempPathFactory) -> Video:
    out = tmp_path_factory.mktemp("pool") / "four.mp4"
    inputs: list[str] = []
    for name in SHOTS:
        inputs += ["-loop", "1", "-t", "2", "-i", str(PHOTOS / name)]
    chains = "".join(f"[{i}]scale=640:360,setsar=1,fps=10[s{i}];" for i in range(len(SHOTS)))
    joined = "".join(f"[s{i}]" for i in range(len(SHOTS)))
    ffmpeg(*inputs, "-filter_complex", f"{chains}{joined}concat=n={len(SHOTS)}:v=1[v]",
           "-map", "[v]", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(out))
    return make_video(out)


class _Shuffled:
    """A scene runner on two threads whose jobs finish in a scrambled order (each sleeps a
    random 0-80 ms first), with models of each thread's own."""

    def __init__(self, params: ObjectParams) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2)
        self._params, self._random = params, random.Random(7)
        self._lock = threading.Lock()
        self.threads: set[str] = set()

    def submit(self, work: Callable[[Models], object]) -> Future[object]:
        delay = self._random.uniform(0.0, 0.08)

        def job() -> object:
            time.sleep(delay)
            with self._lock:
                self.threads.add(threading.current_thread().name)
            return work(worker_models(self._params, registry=default_registry()))
        return self._pool.submit(job)


@pytest.mark.parametrize("ahead", [0, 1, 4])
def test_scenes_on_a_pool_give_the_video_its_own_thread_gives(
        four_shots: Video, monkeypatch: pytest.MonkeyPatch, ahead: int) -> None:
    params = ObjectParams()
    models = rv.load_models(params, registry=default_registry(), threads=1)
    here = represent_video(four_shots, scene_params=SceneParams(), object_params=params,
                           models=models)
    assert len(here.scenes) == len(SHOTS) and here.objects and here.tags
    monkeypatch.setattr(rv, "SCENES_AHEAD", ahead)
    shuffled = _Shuffled(params)
    pooled = represent_video(four_shots, scene_params=SceneParams(), object_params=params,
                             models=models, scenes_on=shuffled)  # type: ignore[arg-type]
    assert pooled == here
    # With scenes ahead, both threads took some (the first also loads its models).
    assert len(shuffled.threads) == (1 if ahead == 0 else 2)


def test_the_pool_gives_each_thread_its_own_models() -> None:
    pool = SceneModelPool(ObjectParams(), registry=default_registry(), workers=2)
    try:
        barrier = threading.Barrier(2)

        def which(models: Models) -> int:
            barrier.wait(timeout=60)  # both threads hold a job at once
            return id(models.detector)
        first, second = pool.submit(which), pool.submit(which)
        assert first.result(timeout=120) != second.result(timeout=120)
    finally:
        pool.close()


def test_a_failing_scene_fails_its_video_and_names_it(four_shots: Video) -> None:
    params = ObjectParams()
    models = rv.load_models(params, registry=default_registry(), threads=1)
    pool = SceneModelPool(params, registry=default_registry(), workers=2)

    class Broken:
        def submit(self, work: Callable[[Models], object]) -> Future[object]:
            def job(m: Models) -> object:
                raise BackendError("the detector broke on this scene")
            return pool.submit(job)
    try:
        with pytest.raises(BackendError, match="broke on this scene"):
            represent_video(four_shots, scene_params=SceneParams(), object_params=params,
                            models=models, scenes_on=Broken())  # type: ignore[arg-type]
    finally:
        pool.close()
