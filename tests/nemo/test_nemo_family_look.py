"""The negative probe's second look at faint birds and dogs, on real camera frames.

The SSD, at the probe's threshold, calls larval fish in idtracker.ai's laboratory tank "bird"
(0.30-0.35 on these frames, boxes of 0.2-0.5 % of the frame); a cockatoo filling imageio's
clip is a bird on every frame. :class:`~needleforge.nemo.checks.build.FamilyLook` must drop
the first and keep the second, so the tank can be a negative of the cockatoo's questions and
the cockatoo's own scene still cannot.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from needleforge.backends.base import Keyframe, RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.errors import StudioError
from needleforge.nemo import TiledProbe
from needleforge.nemo.checks.build import FamilyLook
from needleforge.records import Box, Detection, Scene
from needleforge.records.base import scene_id_for
from needleforge.studio.real_assets import sample_frames


def _frames(name: str) -> list[RGBImage]:
    """12 frames of real clip ``name``, a second apart, at the probe's 640 pixels."""
    try:
        frames = sample_frames(name, every=25, most=12)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")
    out = []
    for frame in frames:
        scale = 640 / max(frame.shape[:2])
        size = (round(frame.shape[1] * scale), round(frame.shape[0] * scale))
        out.append(np.ascontiguousarray(cv2.resize(frame, size, interpolation=cv2.INTER_AREA)))
    return out


@pytest.fixture(scope="module")
def detector() -> EmbeddedDetector:
    """The probe's detector: the SSD at 2x input, threshold 0.3 (``nemo.check``'s defaults)."""
    return EmbeddedDetector(score_threshold=0.3, input_scale=2.0, num_threads=2)


@pytest.fixture(scope="module")
def look() -> FamilyLook:
    return FamilyLook()


def _birds(detector: EmbeddedDetector, frames: list[RGBImage]
           ) -> list[tuple[RGBImage, Detection]]:
    return [(frame, d) for i, frame in enumerate(frames)
            for d in detector.detect(frame, t_s=float(i)) if d.label == "bird"]


@pytest.fixture(scope="module")
def tank() -> list[RGBImage]:
    return _frames("fish")


@pytest.fixture(scope="module")
def fish_birds(detector: EmbeddedDetector, tank: list[RGBImage]
               ) -> list[tuple[RGBImage, Detection]]:
    """The "birds" the SSD sees on both tank recordings."""
    return _birds(detector, tank) + _birds(detector, _frames("fish2"))


def test_fish_in_a_tank_seen_as_birds_are_no_sightings(
        fish_birds: list[tuple[RGBImage, Detection]], look: FamilyLook) -> None:
    birds = fish_birds
    assert len(birds) >= 3, "the SSD no longer sees these fish as birds: re-measure"
    assert all(d.score < look.below for _, d in birds)
    assert [look(frame, d) for frame, d in birds] == [False] * len(birds)


def test_a_cockatoo_stays_a_bird(detector: EmbeddedDetector) -> None:
    """Even looked at whatever its score (``below=1``), most cuts of the whole bird hold the
    verifier's share of bird classes; a close-up of its beak or wing may not, and the scene
    stays refused through its other frames."""
    birds = [(frame, d) for frame, d in _birds(detector, _frames("cockatoo"))
             if d.box.area >= 0.2]
    kept = [FamilyLook(below=1.0)(frame, d) for frame, d in birds]
    assert len(kept) >= 6 and sum(kept) >= 0.7 * len(kept), kept


def test_other_labels_and_confident_birds_are_not_looked_at(look: FamilyLook) -> None:
    """No cut is classified: a black frame would hold no bird classes at all."""
    black = np.zeros((360, 640, 3), np.uint8)
    box = Box(x=0.25, y=0.25, w=0.5, h=0.5)
    assert look(black, Detection(0.0, "person", 0.35, box))
    assert look(black, Detection(0.0, "bird", 0.6, box))
    assert not look(black, Detection(0.0, "bird", 0.35, box))
    assert look(black, Detection(0.0, "bird", 0.35, Box(x=0.5, y=0.5, w=0.01, h=0.01)))


def test_the_probe_drops_what_the_second_look_refuses(
        detector: EmbeddedDetector, look: FamilyLook,
        fish_birds: list[tuple[RGBImage, Detection]]) -> None:
    """The probe on the tank frames where the SSD saw a "bird" (looked at once each)."""
    video_id = "v" + "ab" * 8
    scene = Scene(scene_id_for(video_id, 0), video_id, 0, 0.0, 12.0, 300)
    shown = {id(frame): frame for frame, _ in fish_birds}

    def frames(_: Scene) -> tuple[Keyframe, ...]:
        return tuple(Keyframe(float(i), image) for i, image in enumerate(shown.values()))

    plain = TiledProbe(detector, frames, cols=1, rows=1, overlap=0.0, min_score=0.3)
    looked = TiledProbe(detector, frames, cols=1, rows=1, overlap=0.0, min_score=0.3,
                        second_look=look, second_look_spec=look.spec)
    assert plain.sighting(scene, "bird") is not None
    assert looked.sighting(scene, "bird") is None
    assert looked.key == f"{plain.key} {look.spec}"
