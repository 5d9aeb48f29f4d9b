"""The label check's change gate: only what changed since the scene's earlier frames is
detected.

Frames are 640x360 gravel (scikit-image) with Chelsea the cat pasted small, as the studio
makes small objects; noise stands in for compression, a brightness step for a light change.
The probe is tested with the real SSD detector at the check's 1.5x input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from nemo_cases import backdrop, chelsea, corpus
from PIL import Image

from needleforge.backends.base import Detection, Keyframe, RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.nemo import TiledProbe
from needleforge.nemo.checks.change_gate import MAX_SHARE, SPEC, ChangeGate
from needleforge.records import Scene


@pytest.fixture(scope="module")
def gravel() -> RGBImage:
    return np.asarray(backdrop("gravel.png"))


def _with_cat(gravel: RGBImage, at: tuple[int, int], size: tuple[int, int] = (80, 65)
              ) -> RGBImage:
    frame = Image.fromarray(gravel)
    frame.paste(chelsea().resize(size), at)
    return np.asarray(frame)


def _noisy(image: RGBImage, amplitude: int, seed: int = 0) -> RGBImage:
    noise = np.random.default_rng(seed).integers(-amplitude, amplitude + 1, image.shape)
    return np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def test_first_frame_whole_then_only_what_changed(gravel: RGBImage) -> None:
    gate = ChangeGate()
    assert gate.region(gravel) == (0, 0, 640, 360)
    assert gate.region(gravel) is None  # the same picture: nothing new
    assert gate.region(_noisy(gravel, 4)) is None  # compression-like noise is not a change
    cat = _with_cat(gravel, (400, 120))
    region = gate.region(cat)
    assert region is not None
    x0, y0, x1, y1 = region
    assert x0 <= 400 and y0 <= 120 and x1 >= 480 and y1 >= 185  # the cat, whole
    assert (x1 - x0) * (y1 - y0) < 0.25 * 640 * 360  # and not much more
    assert gate.region(cat) is None  # looked at: the cat standing still is not new
    gate.reset()
    assert gate.region(cat) == (0, 0, 640, 360)  # a new scene starts whole


def test_a_large_change_is_looked_at_whole_and_drift_adds_up(gravel: RGBImage) -> None:
    gate = ChangeGate()
    gate.region(gravel)
    brighter = np.clip(gravel.astype(np.int16) + 40, 0, 255).astype(np.uint8)
    assert gate.region(brighter) == (0, 0, 640, 360)  # over MAX_SHARE: the whole frame
    assert MAX_SHARE < 1.0
    gate.reset()
    gate.region(gravel)
    seen = []
    for step in range(1, 6):  # 1 grey level a frame: each under the threshold on its own
        seen.append(gate.region(np.clip(gravel.astype(np.int16) + step, 0, 255
                                        ).astype(np.uint8)))
    # Under MIN_DIFF (3) at steps 1-2; from 3 levels on, the whole frame: drift adds up.
    assert seen[:2] == [None, None] and (0, 0, 640, 360) in seen[2:4]
    assert gate.region(np.zeros((180, 320, 3), dtype=np.uint8)) == (0, 0, 320, 180)  # new size


class _Counting:
    """A detector wrapper counting the pixels it is given."""

    def __init__(self, inner: EmbeddedDetector) -> None:
        self.inner, self.pixels, self.calls = inner, 0, 0
        self.name, self.version = inner.name, inner.version

    def detect(self, image: RGBImage, *, t_s: float) -> list[Detection]:
        self.calls += 1
        self.pixels += image.shape[0] * image.shape[1]
        return self.inner.detect(image, t_s=t_s)


def test_the_gated_probe_finds_the_cat_that_walks_in_on_a_crop(gravel: RGBImage) -> None:
    """Three frames: gravel, the same gravel, the cat pasted in. The detector sees the first
    frame whole, nothing of the second, a crop of the third, and the cat is found there with
    its box in frame coordinates; the key names the gate."""
    scene: Scene = corpus().scenes[3]
    frames: Sequence[Keyframe] = (
        Keyframe(scene.start_s + 0.5, gravel), Keyframe(scene.start_s + 1.5, gravel),
        Keyframe(scene.start_s + 2.5, _with_cat(gravel, (400, 120))))
    detector = _Counting(EmbeddedDetector(score_threshold=0.3, input_scale=1.5, num_threads=1))
    probe = TiledProbe(detector, lambda _: frames, cols=1, rows=1, overlap=0.0, min_score=0.3,
                       gate=True)
    seen = probe.sighting(scene, "cat")
    assert seen is not None and seen.t_s == pytest.approx(scene.start_s + 2.5)
    assert seen.box.x == pytest.approx(400 / 640, abs=0.05)
    assert seen.box.y == pytest.approx(120 / 360, abs=0.08)
    assert detector.calls == 2 and detector.pixels < 1.3 * 640 * 360
    assert probe.cost.frames == 3 and 1.0 < probe.cost.detector_area < 1.3
    assert probe.key.endswith(SPEC)
    whole = TiledProbe(detector, lambda _: frames, cols=1, rows=1, overlap=0.0, min_score=0.3)
    assert SPEC not in whole.key  # scans of the two kinds are not mixed up
