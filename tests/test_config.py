"""params.yaml validation: unknown keys are named, bad values explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.config import Params, ParamsError, load_params, parse_params


def test_defaults_and_repo_params_file_validate() -> None:
    assert Params().ingest.required_scopes == ["benchmark"]
    repo_params = Path(__file__).resolve().parents[1] / "params.yaml"
    assert load_params(repo_params).studio.programs


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ingset": {}}, "unknown key 'ingset'"),
        ({"ingest": {"link_mod": "copy"}}, "unknown key 'ingest.link_mod'"),
        ({"ingest": {"link_mode": "teleport"}}, "ingest.link_mode"),
        ({"studio": {"programs": [{"name": "a", "colour": 1}]}},
         "unknown key 'studio.programs.0.colour'"),
        ({"studio": {"programs": [{"name": "a", "min_scene_s": 9, "max_scene_s": 3}]}},
         "max_scene_s = 3.0 must be >= min_scene_s = 9.0"),
        ([1, 2], "expected a mapping of sections"),
    ],
)
def test_bad_params_are_named(data: object, message: str) -> None:
    with pytest.raises(ParamsError) as err:
        parse_params(data, source="p.yaml")
    assert message in str(err.value)


def test_load_params_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match="params file not found"):
        load_params(tmp_path / "nope.yaml")
    bad = tmp_path / "latin.yaml"
    bad.write_bytes("studio:\n  rights_holder: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ParamsError, match="not UTF-8"):
        load_params(bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("studio: [\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(broken)
