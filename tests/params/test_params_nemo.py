"""``nemo`` section of params.yaml: the checks of the negatives as one nested model,
``nemo.check``, and the old flat ``nemo.check_*`` keys refused with their new place named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from needleforge.params import (
    MOVED_KEYS,
    NegativeCheckParams,
    NemoParams,
    ParamsError,
    parse_params,
    resolve_params,
)
from needleforge.params.nemo import NESTED_ONLY

#: The 17 flat ``nemo.check_*`` defaults before they were nested: the nesting changes no value.
FLAT_DEFAULTS = {
    "check_negatives": True, "check_every_s": 1.0, "check_max_side": 640,
    "check_input_scale": 2.0, "check_cols": 1, "check_rows": 1, "check_overlap": 0.2,
    "check_min_score": 0.3, "check_detector": "embedded", "check_detector_options": {},
    "check_changed_only": True, "check_instances": True, "check_pose": True,
    "check_attire": True, "check_setup": True, "check_instance_min_score": 0.8,
    "check_instance_search": "coarse-to-fine",
}


def test_the_nested_defaults_are_the_flat_ones() -> None:
    nested = NemoParams().check.model_dump()
    assert {key: nested.pop(key) for key in NESTED_ONLY} == {"family_look": True}
    assert {f"check_{key}": value for key, value in nested.items()} == FLAT_DEFAULTS
    assert set(MOVED_KEYS["nemo"]) == set(FLAT_DEFAULTS)


def test_a_nested_key_parses_and_the_rest_keep_their_defaults() -> None:
    check = parse_params({"nemo": {"check": {"every_s": 8.0, "instances": False}}}).nemo.check
    assert (check.every_s, check.instances) == (8.0, False)
    assert check.input_scale == NegativeCheckParams().input_scale


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_KEYS["nemo"].items()))
def test_each_old_flat_key_names_its_new_place(old: str, new: str) -> None:
    with pytest.raises(ParamsError) as err:
        parse_params({"nemo": {old: FLAT_DEFAULTS[old]}}, source="p.yaml")
    assert f"nemo.{old}: moved to nemo.{new}" in str(err.value)
    assert str(err.value).startswith("p.yaml: invalid parameters")
    # the new place takes the same value
    section, _, key = new.partition(".")
    assert parse_params({"nemo": {section: {key: FLAT_DEFAULTS[old]}}}).nemo == NemoParams()


def test_a_file_with_old_keys_names_the_file_every_moved_key_and_every_other_problem(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text("nemo:\n  check_every_s: 2\n  check_negatives: false\n  seed: x\n"
                    "scenes: {sed: 1}\n")
    with pytest.raises(ParamsError) as err:
        resolve_params(path)
    message = str(err.value)
    assert message.startswith(f"{path}: invalid parameters")
    assert "nemo.check_every_s: moved to nemo.check.every_s" in message
    assert "nemo.check_negatives: moved to nemo.check.negatives" in message
    assert "nemo.seed" in message and "unknown key 'scenes.sed'" in message


@pytest.mark.parametrize(("data", "message"), [
    ({"check": {"every": 2}}, "unknown key 'nemo.check.every'"),
    ({"check": {"every_s": 0}}, "nemo.check.every_s: Input should be greater than 0"),
    ({"check": {"instance_search": "fast"}}, "nemo.check.instance_search"),
    ({"check": 3}, "nemo.check: Input should be a valid dictionary"),
    ({"check": {"check_every_s": 2}}, "unknown key 'nemo.check.check_every_s'"),
])
def test_bad_nested_check_keys_are_named(data: dict[str, object], message: str) -> None:
    with pytest.raises(ParamsError) as err:
        parse_params({"nemo": data})
    assert message in str(err.value)


def test_with_check_validates_what_it_changes() -> None:
    params = NemoParams(min_negatives=3)
    changed = params.with_check(every_s=4.0, instances=False)
    check = changed.check
    assert (check.every_s, check.instances, changed.min_negatives) == (4.0, False, 3)
    assert params.check.every_s == 1.0  # the original is unchanged
    with pytest.raises(ValidationError, match="every_s"):
        params.with_check(every_s=-1.0)
    with pytest.raises(ValidationError, match="every"):
        params.with_check(every=2.0)
