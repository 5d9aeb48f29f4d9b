"""``expand`` section of params.yaml: defaults, ranges, caps, unknown keys."""

from __future__ import annotations

import pytest

from needleforge.params import ExpandParams, Params, ParamsError, parse_params


def test_defaults_follow_the_paper() -> None:
    params = Params().expand
    assert (params.medium_min_s, params.medium_max_s) == (150.0, 900.0)
    assert params.long_min_s > 900.0 and params.long_targets == 8
    assert (params.min_piece_s, params.min_multi_target_s) == (2.0, 6.0)
    assert params.medium.single.object == params.long.multi.scene == -1


def test_caps_parse_per_bucket_row_and_type() -> None:
    params = parse_params({"expand": {"long": {"multi": {"object": 5, "scene": 0}},
                                      "short_multi": {"scene": 2}}}).expand
    assert (params.long.multi.object, params.long.multi.scene) == (5, 0)
    assert params.long.single.object == -1 and params.short_multi.scene == 2


@pytest.mark.parametrize("bad", [
    {"sed": 1},
    {"medium": {"single": {"objects": 1}}},
    {"medium": {"single": {"object": -2}}},
    {"medium_min_s": 100.0},
    {"medium_max_s": 901.0},
    {"medium_min_s": 600.0, "medium_max_s": 300.0},
    {"long_min_s": 900.0},
    {"long_min_s": 2000.0, "long_max_s": 1000.0},
    {"min_multi_target_s": 3.9},
    {"max_pieces": 1},
    {"long_targets": 0},
])
def test_bad_values_are_refused_with_the_key_named(bad: dict[str, object]) -> None:
    with pytest.raises(ParamsError) as err:
        parse_params({"expand": bad})
    assert "expand" in str(err.value)


def test_params_are_frozen() -> None:
    params = ExpandParams()
    with pytest.raises(ValueError, match="frozen"):
        params.seed = 3  # type: ignore[misc]
