"""The ``hf_vlm`` question writer and verifier: a real tiny Idefics3, and a scripted stand-in.

The tiny model's tokenizer knows a dozen words and no braces, so it can never write JSON: its
answers exercise the refusal path (a Skip, a failed verdict, each saying what came back). The
JSON path is exercised with :class:`ScriptedVlm`, which records the image it was shown, so the
drawn box and the one-frame-per-clip rule can be checked.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest
import torch

from needleforge.backends import default_registry
from needleforge.backends.base import RGBImage
from needleforge.backends.hf.writer import (
    HfDescriber,
    HfVerifier,
    describer_from_vlm,
    verifier_from_vlm,
)
from needleforge.backends.writer_prompts import PROMPTS_VERSION, choose_template
from needleforge.backends.writing import Skip, VerifyRequest, WrittenNeedle
from needleforge.errors import BackendError
from needleforge.records import object_id_for, scene_id_for
from tests.backends.hf_tiny_models import SCRIPTED_ANSWER, build_tiny_idefics3
from tests.backends.writer_cases import (
    VIDEO_ID,
    colour_name,
    has_red_outline,
    negative_view,
    target_view,
)

TARGET = object_id_for(scene_id_for(VIDEO_ID, 0), 0)


@pytest.fixture(scope="module")
def scripted_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Idefics3 that answers SCRIPTED_ANSWER to every prompt."""
    return build_tiny_idefics3(tmp_path_factory.mktemp("hf-writer") / "tiny-scripted",
                               scripted=True)


class ScriptedVlm:
    """Answers from a queue and keeps what it was shown (a stand-in for HfVlmTagger)."""

    name = "hf-scripted"
    version = "test-1"

    def __init__(self, *answers: str) -> None:
        self.answers = deque(answers)
        self.seen: list[tuple[RGBImage, str, int | None]] = []

    def ask(self, image: RGBImage, *, prompt: str, max_new_tokens: int | None = None) -> str:
        self.seen.append((image, prompt, max_new_tokens))
        return self.answers.popleft()


def fit(fits: bool, why: str = "seen") -> str:
    return json.dumps({"fits": fits, "why": why})


def request(*colours: str) -> VerifyRequest:
    return VerifyRequest("object", "the white cat", "When does the white cat appear?",
                         target_view(), tuple(negative_view(i + 1, c)
                                              for i, c in enumerate(colours)))


def test_tiny_model_answers_are_refused_as_not_json(scripted_dir: Path) -> None:
    describer = HfDescriber(scripted_dir, max_new_tokens=24)
    written = describer.write(target_view(), needle_type="object")
    assert isinstance(written, Skip)
    assert written.reason == ("model answer not in the required format: no JSON object in "
                              f"the answer {SCRIPTED_ANSWER!r}")
    assert describer.name == "hf-tiny-scripted"
    assert describer.version.endswith(f"+prompts-{PROMPTS_VERSION}")
    verdict = HfVerifier(scripted_dir, max_new_tokens=24).verify(request("green"))
    assert not verdict.passed
    assert verdict.reason.startswith(f"verifier answer on target {TARGET} not in the required "
                                     f"format: no JSON object")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_hf_writers_run_on_cuda_like_on_cpu(scripted_dir: Path) -> None:
    view = target_view()
    on_cpu = HfDescriber(scripted_dir, max_new_tokens=24).write(view, needle_type="object")
    on_gpu = HfDescriber(scripted_dir, max_new_tokens=24, device="cuda",
                         dtype="bfloat16").write(view, needle_type="object")
    assert on_gpu == on_cpu and isinstance(on_gpu, Skip)
    verdict = HfVerifier(scripted_dir, max_new_tokens=24, device="cuda:0",
                         dtype="bfloat16").verify(request("green"))
    assert not verdict.passed and "not in the required format" in verdict.reason


def test_registry_builds_the_hf_writers(scripted_dir: Path) -> None:
    registry = default_registry()
    built = registry.create("describer", "hf_vlm", model_dir=scripted_dir, max_new_tokens=8)
    assert isinstance(built, HfDescriber)
    assert isinstance(registry.create("verifier", "hf_vlm", model_dir=str(scripted_dir)),
                      HfVerifier)
    with pytest.raises(BackendError, match=r"accepted: model_dir, max_new_tokens, device, dtype"):
        registry.create("verifier", "hf_vlm", model_dir=scripted_dir, max_frames=2)
    with pytest.raises(BackendError, match=r"not found|does not exist|no such"):
        HfDescriber(scripted_dir / "missing")


def test_describer_shows_one_marked_frame_and_reads_json() -> None:
    vlm = ScriptedVlm(json.dumps({"skip": False, "reason": "", "description": "the white cat",
                                  "question": "When does the white cat appear?"}))
    view = target_view()
    written = describer_from_vlm(vlm, max_new_tokens=99).write(view, needle_type="object")
    # The model writes the description; the question comes from our own templates.
    tid, text = choose_template("object", key=view.target_id, seed=0)
    assert written == WrittenNeedle("object", "the white cat", text.format(obj="the white cat"),
                                    f"hf/scripted/v1+{tid}")
    ((image, prompt, tokens),) = vlm.seen
    assert has_red_outline(image) and colour_name(image) == "blue" and tokens == 99
    assert prompt.startswith("You are helping to build") and "The frame above is" in prompt


def test_describer_skip_and_abstract_answers() -> None:
    vlm = ScriptedVlm('{"skip": true, "reason": "too vague", "description": "", '
                      '"question": ""}')
    written = describer_from_vlm(vlm).write(target_view(), needle_type="object")
    assert isinstance(written, Skip) and written.reason.endswith(": too vague")
    untouched = ScriptedVlm()
    skipped = describer_from_vlm(untouched, abstract_labels=("cat",)).write(
        target_view(), needle_type="object")
    assert isinstance(skipped, Skip) and untouched.seen == []


def test_verifier_asks_one_frame_per_clip() -> None:
    vlm = ScriptedVlm(fit(True, "a white cat"), fit(False), fit(False))
    verdict = verifier_from_vlm(vlm).verify(request("green", "yellow"))
    assert verdict.passed and "none of the 2 negatives fits" in verdict.reason
    marks = [has_red_outline(image) for image, _, _ in vlm.seen]
    assert marks == [True, False, False]
    assert [colour_name(image) for image, _, _ in vlm.seen] == ["blue", "green", "yellow"]
    assert all(np.asarray(image).ndim == 3 for image, _, _ in vlm.seen)


def test_verifier_failures_name_the_clip() -> None:
    vlm = ScriptedVlm(fit(True), fit(True, "also a white cat"))
    verdict = verifier_from_vlm(vlm).verify(request("green", "yellow"))
    assert not verdict.passed and "also fits negative" in verdict.reason

    class Broken(ScriptedVlm):
        def ask(self, image: RGBImage, *, prompt: str, max_new_tokens: int | None = None) -> str:
            raise BackendError("the processor cannot build inputs: too many tokens")

    verdict = verifier_from_vlm(Broken()).verify(request("green"))
    assert verdict.reason == (f"verifier call on target {TARGET} failed: the processor cannot "
                              f"build inputs: too many tokens")
