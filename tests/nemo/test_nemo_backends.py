"""The describer/verifier families of the backend registry and the ``nemo`` params section."""

from __future__ import annotations

import pytest
from nemo_cases import corpus

from needleforge.backends import Registry, default_registry
from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.backends.writer_prompts import choose_template
from needleforge.backends.writing import TargetView, WrittenNeedle
from needleforge.errors import BackendError
from needleforge.nemo import build_backends
from needleforge.params import NemoParams, ParamsError, parse_params


def test_registry_is_explicit_and_names_what_it_knows() -> None:
    empty = Registry()
    assert empty.names("describer") == () and empty.names("verifier") == ()
    with pytest.raises(BackendError, match=r"unknown describer backend 'embedded'; known: "
                                           r"\(none registered\)"):
        empty.create("describer", "embedded")
    registry = default_registry()
    expected = ("embedded", "hf_vlm", "openai_http")
    assert registry.names("describer") == expected
    # The table-only verifier stays available beside the default one that looks again.
    assert registry.names("verifier") == ("embedded", "embedded_tables", "hf_vlm",
                                          "openai_http")
    with pytest.raises(BackendError, match="unknown verifier backend 'gpt'; known: embedded, "
                                           "embedded_tables, hf_vlm, openai_http"):
        registry.create("verifier", "gpt")
    with pytest.raises(BackendError, match="unknown backend family 'writer'"):
        registry.names("writer")
    with pytest.raises(BackendError, match="already registered"):
        registry.register("describer", "embedded", EmbeddedDescriber)
    with pytest.raises(BackendError, match=r"bad options \['temperature'\].*accepted: seed"):
        registry.create("describer", "embedded", temperature=0.2)
    registry.register("verifier", "wrong", EmbeddedDescriber)  # type: ignore[call-overload]
    with pytest.raises(BackendError, match="does not implement Verifier"):
        registry.create("verifier", "wrong")


def test_build_backends_shares_the_stage_seed_and_options() -> None:
    params = NemoParams(seed=9, describer_options={"max_objects": 1})
    describer, verifier = build_backends(params, registry=default_registry())
    assert isinstance(describer, EmbeddedDescriber) and isinstance(verifier, EmbeddedVerifier)
    c = corpus()
    cat = c.objects[0]
    view = TargetView(c.scene(0), tuple(t for t in c.tags if t.scene_id == cat.scene_id),
                      (cat,), cat)
    written = describer.write(view, needle_type="object")
    assert isinstance(written, WrittenNeedle)
    assert written.template_id == choose_template("object", key=cat.object_id, seed=9)[0]
    params = NemoParams(verifier="nope")
    with pytest.raises(BackendError, match="unknown verifier backend 'nope'"):
        build_backends(params, registry=default_registry())


def test_nemo_params_are_checked() -> None:
    assert parse_params({}).nemo == NemoParams()
    defaults = NemoParams()
    assert (defaults.min_scene_s, defaults.min_visible_s, defaults.min_scene_tags) == (
        2.5, 2.0, 1)
    assert (defaults.min_area_frac, defaults.max_area_frac) == (0.05, 0.25)
    assert "sky" in defaults.abstract_labels
    with pytest.raises(ParamsError, match=r"unknown key 'nemo\.sed'"):
        parse_params({"nemo": {"sed": 1}})
    with pytest.raises(ParamsError, match=r"short_max_s = 30\.0 must be >= short_min_s = 40\.0"):
        parse_params({"nemo": {"short_min_s": 40, "short_max_s": 30}})
    with pytest.raises(ParamsError, match=r"nemo\.short_max_s"):
        parse_params({"nemo": {"short_max_s": 150}})
    with pytest.raises(ParamsError, match=r"max_area_frac = 0\.1 must be >= min_area_frac = 0\.2"):
        parse_params({"nemo": {"min_area_frac": 0.2, "max_area_frac": 0.1}})
