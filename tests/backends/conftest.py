"""Fixtures for the embedded backends: real models, real photos shipped in installed packages.

Models are built once per session (the SSD graph alone is 70 MB) and shared read-only. Photos
come from scikit-image's bundled ``skimage/data`` folder, located with ``find_spec`` and read
with Pillow so the tests neither import ``skimage.data`` (a lazy loader with a download
registry) nor need the network.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.backends.embedded.ocr import EmbeddedTextReader
from needleforge.backends.embedded.tagger import EmbeddedTagger


def skimage_photo(filename: str) -> RGBImage:
    """An RGB photo from scikit-image's bundled sample data (e.g. ``chelsea.png``)."""
    spec = importlib.util.find_spec("skimage")
    assert spec is not None and spec.submodule_search_locations, "scikit-image is not installed"
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / filename
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


@pytest.fixture(scope="session")
def chelsea() -> RGBImage:
    """A tabby cat (Chelsea) on a blanket, 451x300: the detector must say "cat"."""
    return skimage_photo("chelsea.png")


@pytest.fixture(scope="session")
def astronaut() -> RGBImage:
    """Eileen Collins in a flight suit, 512x512: a person."""
    return skimage_photo("astronaut.png")


@pytest.fixture(scope="session")
def coffee() -> RGBImage:
    """A cup of espresso on a saucer, 600x400: a cup."""
    return skimage_photo("coffee.png")


@pytest.fixture(scope="session")
def black_frame() -> RGBImage:
    """An all-black 640x360 frame (fade-outs are common): nothing should be found on it."""
    return np.zeros((360, 640, 3), dtype=np.uint8)


@pytest.fixture(scope="session")
def detector() -> EmbeddedDetector:
    """The real SSD-MobileNet-v2 COCO detector with default options."""
    return EmbeddedDetector()


@pytest.fixture(scope="session")
def tagger() -> EmbeddedTagger:
    """The real EfficientNet-Lite3 tagger with default options."""
    return EmbeddedTagger()


@pytest.fixture(scope="session")
def text_reader() -> EmbeddedTextReader:
    """The real RapidOCR reader; a smaller detection side keeps each call well under 1 s."""
    return EmbeddedTextReader(det_limit_side_len=360)
