"""The transformers backends on tiny random-weight models built offline (no download).

Random weights give arbitrary scores and answers, so these tests check the wiring: labels come
from ``id2label``, ``top_k`` and the threshold cut where they should, softmax vs sigmoid,
versions follow the files, answers are deterministic, and parsing turns a known answer (the
scripted VLM, see ``hf_tiny_models``) into the expected tags. Prompt texts are snapshots: a
prompt change must be deliberate.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from needleforge.backends import Tagger, default_registry
from needleforge.backends.base import RGBImage
from needleforge.backends.hf.model_dir import model_version, require_model_dir
from needleforge.backends.hf.tagger import HfClassifierTagger, class_tags
from needleforge.backends.hf.vlm import HfVlmTagger
from needleforge.backends.hf.vlm_prompts import (
    DESCRIBE_PROMPT,
    TAG_PROMPT,
    clean_referring_expression,
    draw_box,
    parse_tag_answer,
)
from needleforge.errors import BackendError
from needleforge.records import Box, TagScore
from tests.backends.hf_tiny_models import (
    SCRIPTED_ANSWER,
    VLM_WORDS,
    build_tiny_idefics3,
    build_tiny_vit,
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tiny model folder these tests load, built once (about 1 s in all)."""
    root = tmp_path_factory.mktemp("hf-models")
    return {
        "vit": build_tiny_vit(root / "tiny-vit", seed=0),
        "vit_again": build_tiny_vit(root / "tiny-vit-again", seed=0),
        "vit_other": build_tiny_vit(root / "tiny-vit-other", seed=1),
        "vit_multi": build_tiny_vit(root / "tiny-vit-multi", seed=0, multi_label=True),
        "vlm": build_tiny_idefics3(root / "tiny-idefics3", seed=0),
        "vlm_scripted": build_tiny_idefics3(root / "tiny-idefics3-scripted", scripted=True),
        "vlm_no_template": build_tiny_idefics3(root / "no-template", chat_template=False),
    }


@pytest.fixture(scope="module")
def photo() -> RGBImage:
    """A fixed-noise 48x64 RGB frame: not square and not the models' 32 px input side."""
    return np.random.default_rng(7).integers(0, 256, (48, 64, 3), dtype=np.uint8)


# --- classifier --------------------------------------------------------------------------


def test_classifier_labels_come_from_id2label(models: dict[str, Path]) -> None:
    tagger = HfClassifierTagger(models["vit"])
    # "tabby, tabby cat" is made readable the way the embedded ImageNet tagger does it.
    assert tagger.class_tags == ("cat", "dog", "red car", "tabby cat")
    assert tagger.name == "hf-tiny-vit"
    assert isinstance(tagger, Tagger)


def test_classifier_scores_are_a_softmax(models: dict[str, Path], photo: RGBImage) -> None:
    probs = HfClassifierTagger(models["vit"]).probabilities(photo)
    assert probs.shape == (4,)
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)
    assert np.all((probs >= 0) & (probs <= 1))


def test_multi_label_classifier_uses_sigmoids(models: dict[str, Path], photo: RGBImage) -> None:
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    tagger = HfClassifierTagger(models["vit_multi"])
    assert tagger.multi_label
    # Independent reference: the same folder through transformers directly.
    processor = AutoImageProcessor.from_pretrained(models["vit_multi"], backend="pil")
    model = AutoModelForImageClassification.from_pretrained(models["vit_multi"])
    from PIL import Image

    with torch.inference_mode():
        logits = model(**processor(images=Image.fromarray(photo), return_tensors="pt")).logits
    expected = torch.sigmoid(logits[0]).numpy()
    np.testing.assert_allclose(tagger.probabilities(photo), expected, atol=1e-6)


def test_top_k_and_threshold_cut_the_ranked_classes(
    models: dict[str, Path], photo: RGBImage
) -> None:
    everything = HfClassifierTagger(models["vit"], top_k=4, score_threshold=0.0)
    probs = everything.probabilities(photo)
    ranked = [everything.class_tags[i] for i in np.argsort(probs)[::-1]]
    tags = everything.tag(photo)
    assert [t.tag for t in tags] == ranked
    assert [t.score for t in tags] == sorted((float(p) for p in probs), reverse=True)

    top2 = HfClassifierTagger(models["vit"], top_k=2, score_threshold=0.0).tag(photo)
    assert [t.tag for t in top2] == ranked[:2]

    cut = float(np.sort(probs)[-2])  # keeps exactly the two best (scores >= threshold)
    kept = HfClassifierTagger(models["vit"], top_k=4, score_threshold=cut).tag(photo)
    assert [t.tag for t in kept] == ranked[:2]
    assert HfClassifierTagger(models["vit"], score_threshold=1.0).tag(photo) == []


def test_classifier_is_deterministic_and_versioned_by_its_files(
    models: dict[str, Path], photo: RGBImage
) -> None:
    first = HfClassifierTagger(models["vit"], score_threshold=0.0)
    same_seed = HfClassifierTagger(models["vit_again"], score_threshold=0.0)
    other_seed = HfClassifierTagger(models["vit_other"], score_threshold=0.0)
    assert first.tag(photo) == first.tag(photo) == same_seed.tag(photo)
    assert first.version == same_seed.version
    assert first.version.startswith("transformers-")
    # Same architecture and labels (same config), other weights: another version.
    assert other_seed.version != first.version
    assert other_seed.version.split(".w.")[0] == first.version.split(".w.")[0]
    assert not np.allclose(first.probabilities(photo), other_seed.probabilities(photo))


def test_class_tags_need_a_label_for_every_output() -> None:
    assert class_tags({"0": "a", "1": "b"}, num_labels=2) == ("a", "b")
    with pytest.raises(BackendError, match=r"no label for class\(es\) \[2\] of 3"):
        class_tags({0: "a", 1: "b"}, num_labels=3)
    with pytest.raises(BackendError, match="blank labels"):
        class_tags({0: "a", 1: " "}, num_labels=2)


# --- folder checks -----------------------------------------------------------------------


def test_missing_folder_config_or_weights_name_the_path(
    models: dict[str, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(BackendError, match=rf"{missing} does not exist"):
        HfClassifierTagger(missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BackendError, match=rf"{empty} is not a transformers model folder: no "
                                           r"config\.json"):
        HfVlmTagger(empty)
    (empty / "config.json").write_text('{"labels": 3}')
    with pytest.raises(BackendError, match=r"has no 'model_type'"):
        HfClassifierTagger(empty)
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    shutil.copy(models["vit"] / "config.json", no_weights)
    with pytest.raises(BackendError, match=rf"{no_weights} holds no weights"):
        HfClassifierTagger(no_weights)
    a_file = tmp_path / "model.safetensors"
    a_file.write_bytes(b"")
    with pytest.raises(BackendError, match="is a file, not a directory"):
        require_model_dir(a_file)


def test_wrong_kind_of_model_folder_is_refused(models: dict[str, Path]) -> None:
    with pytest.raises(BackendError, match="not a loadable image-classification model"):
        HfClassifierTagger(models["vlm"])
    with pytest.raises(BackendError, match="lacks a tokenizer"):
        HfVlmTagger(models["vit"])
    with pytest.raises(BackendError, match="no chat template"):
        HfVlmTagger(models["vlm_no_template"])


def test_bad_options_are_refused_before_loading(models: dict[str, Path]) -> None:
    with pytest.raises(BackendError, match=r"top_k = 0 must be >= 1"):
        HfClassifierTagger(models["vit"], top_k=0)
    with pytest.raises(BackendError, match=r"score_threshold = 1.5 must be in \[0, 1\]"):
        HfClassifierTagger(models["vit"], score_threshold=1.5)
    with pytest.raises(BackendError, match=r"max_new_tokens = 0 must be >= 1"):
        HfVlmTagger(models["vlm"], max_new_tokens=0)
    with pytest.raises(BackendError, match=r"dtype = 'int8' must be one of auto, float32"):
        HfVlmTagger(models["vlm"], dtype="int8")  # type: ignore[arg-type]
    with pytest.raises(BackendError, match=r"device = 'tpu'"):
        HfClassifierTagger(models["vit"], device="tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_on_a_machine_without_it_is_refused(models: dict[str, Path]) -> None:
    with pytest.raises(BackendError, match=r"torch.cuda.is_available\(\) is False"):
        HfClassifierTagger(models["vit"], device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_taggers_run_on_cuda(models: dict[str, Path], photo: RGBImage) -> None:
    cpu = HfClassifierTagger(models["vit"], score_threshold=0.0)
    gpu = HfClassifierTagger(models["vit"], score_threshold=0.0, device="cuda:0")
    np.testing.assert_allclose(gpu.probabilities(photo), cpu.probabilities(photo), atol=1e-4)
    vlm = HfVlmTagger(models["vlm_scripted"], device="cuda", dtype="bfloat16")
    assert [t.tag for t in vlm.tag(photo)] == ["cat", "dog", "red car"]
    with pytest.raises(BackendError, match="CUDA device"):
        HfClassifierTagger(models["vit"], device=f"cuda:{torch.cuda.device_count()}")


# --- VLM tagger --------------------------------------------------------------------------


def test_vlm_tags_parse_the_models_answer(models: dict[str, Path], photo: RGBImage) -> None:
    tagger = HfVlmTagger(models["vlm_scripted"])
    assert tagger.ask(photo, prompt=TAG_PROMPT) == SCRIPTED_ANSWER
    assert tagger.tag(photo) == [
        TagScore(tag="cat", score=1.0),
        TagScore(tag="dog", score=1.0),
        TagScore(tag="red car", score=1.0),
    ]
    assert tagger.describe_object(photo, Box(x=0.1, y=0.2, w=0.5, h=0.5)) == (
        "cat, dog and the red car"
    )
    assert tagger.name == "hf-tiny-idefics3-scripted"
    assert isinstance(tagger, Tagger)


def test_random_vlm_is_deterministic_and_speaks_its_vocabulary(
    models: dict[str, Path], photo: RGBImage
) -> None:
    tagger = HfVlmTagger(models["vlm"], max_new_tokens=12)
    answer = tagger.ask(photo, prompt=TAG_PROMPT)
    assert answer == tagger.ask(photo, prompt=TAG_PROMPT)  # greedy decoding
    assert set(answer.split()) <= set(VLM_WORDS)  # special tokens were skipped
    tags = tagger.tag(photo)
    assert tags == parse_tag_answer(answer)
    assert all(set(t.tag.split()) <= set(VLM_WORDS) for t in tags)
    assert len(tagger.ask(photo, prompt=TAG_PROMPT, max_new_tokens=2).split()) <= 2
    box = Box(x=0.0, y=0.0, w=0.5, h=1.0)
    answer_on_marked = tagger.ask(draw_box(photo, box=box), prompt=DESCRIBE_PROMPT)
    expected = clean_referring_expression(answer_on_marked)
    assert tagger.describe_object(photo, box) == expected
    assert tagger.version == model_version(models["vlm"])


def test_vlm_rejects_bad_inputs(models: dict[str, Path], photo: RGBImage) -> None:
    tagger = HfVlmTagger(models["vlm_scripted"])
    with pytest.raises(BackendError, match="prompt must not be empty"):
        tagger.ask(photo, prompt="  ")
    with pytest.raises(BackendError, match="dtype = float32 must be uint8"):
        tagger.tag(photo.astype(np.float32))  # type: ignore[arg-type]


# --- prompts and parsing -----------------------------------------------------------------


def test_prompt_snapshots() -> None:
    assert TAG_PROMPT == (
        "What objects can be seen in this image? Reply with a single line: a comma-separated "
        "list of short nouns (one or two words each), with no sentences, numbers or "
        "explanations."
    )
    assert DESCRIBE_PROMPT == (
        "One object in this image is outlined by a red rectangle. Reply with a short noun "
        "phrase, at most twelve words, that singles out that object from everything else in "
        "the image, using its kind and, where they help, its colour, position or action. Do "
        "not mention the rectangle or the outline. Reply with the phrase only."
    )


@pytest.mark.parametrize(
    ("answer", "tags"),
    [
        ("dog, bicycle, tree", ["dog", "bicycle", "tree"]),
        ("A Dog, the bicycle; an old tree.", ["dog", "bicycle", "old tree"]),
        ("1. cat\n2. cat\n3) sofa\n- lamp\n* TV", ["cat", "sofa", "lamp", "tv"]),
        ("I can see a cat, a dog and a ball", ["cat", "dog", "ball"]),
        ("salt and pepper, cup & saucer", ["salt and pepper", "cup", "saucer"]),
        ("Objects: person, traffic light, and some cars.", ["person", "traffic light", "cars"]),
        ("The image shows a man riding a horse along a beach at sunset", []),
        ("", []),
        (" , ; 42, ... ", []),
        ("\"cat\", 'dog', **car**", ["cat", "dog", "car"]),
        ("a supercalifragilisticexpialidocious thing", []),
    ],
)
def test_parse_tag_answer(answer: str, tags: list[str]) -> None:
    parsed = parse_tag_answer(answer)
    assert [t.tag for t in parsed] == tags
    assert all(t.score == 1.0 for t in parsed)


@pytest.mark.parametrize(
    ("answer", "expression"),
    [
        ("the red car on the left", "the red car on the left"),
        ('"The dog lying on the sofa."\nIt is brown.', "The dog lying on the sofa"),
        ("It is the man in the red box holding an umbrella", "the man holding an umbrella"),
        ("**tall woman**, highlighted", "tall woman"),
        ("The outlined object is a blue mug inside the rectangle.", "a blue mug"),
        ("\n\n", ""),
        (" ".join(["word"] * 30), " ".join(["word"] * 16)),
    ],
)
def test_clean_referring_expression(answer: str, expression: str) -> None:
    assert clean_referring_expression(answer) == expression


def test_draw_box_outlines_a_copy_inside_the_box() -> None:
    image = np.zeros((100, 200, 3), dtype=np.uint8)
    marked = draw_box(image, box=Box(x=0.5, y=0.5, w=0.5, h=0.5))
    assert image.sum() == 0  # the caller's frame is untouched
    red = np.all(marked == (255, 0, 0), axis=-1)
    ys, xs = np.nonzero(red)
    assert (ys.min(), ys.max(), xs.min(), xs.max()) == (50, 99, 100, 199)
    assert not red[75, 150]  # an outline, not a filled box
    assert red[50:52, 100:200].all() and red[98:100, 100:200].all()  # 2 px at this size


# --- registry and laziness ---------------------------------------------------------------


def test_registry_builds_hf_taggers_and_lists_required_options(
    models: dict[str, Path], photo: RGBImage
) -> None:
    registry = default_registry()
    assert {"hf", "hf_vlm"} <= set(registry.names("tagger"))
    tagger = registry.create("tagger", "hf", model_dir=models["vit"], top_k=1)
    assert len(tagger.tag(photo)) <= 1
    with pytest.raises(BackendError, match=r"accepted: model_dir, top_k, score_threshold, device"):
        registry.create("tagger", "hf")
    with pytest.raises(BackendError, match=r"accepted: model_dir, max_new_tokens, device, dtype"):
        registry.create("tagger", "hf_vlm", max_tokens=3)


_LAZY_PROBE = """
import json, sys
from needleforge.backends import default_registry
default_registry()
print(json.dumps([m for m in ("torch", "transformers", "tokenizers", "ram") if m in sys.modules]))
"""


def test_registering_the_gpu_backends_imports_no_model_runtime() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _LAZY_PROBE], capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
