"""params.yaml validation: unknown keys are named, bad values explained; one owner of defaults
(the models of needleforge.params), params.yaml holding only the sample's deliberate
differences, and one rule for a run given no params file, shared by the CLI and every flow."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from needleforge.params import (
    EvaluateParams,
    Params,
    ParamsError,
    load_params,
    parse_params,
    resolve_params,
)

ROOT = Path(__file__).resolve().parents[2]
PARAMS_FILE = ROOT / "params.yaml"

#: Every key the sample recipe (params.yaml) sets, each a deliberate difference from the
#: default, commented in params.yaml with its reason. Adding an override means adding it here.
SAMPLE_OVERRIDES = frozenset({
    # sample size: one program long enough for medium and long montages
    "studio.programs",
    # demo budget: same cuts, faster decoder
    "scenes.backend",
    # demo budget: the tagger looks at fewer keyframes
    "objects.tag_keyframes_per_scene",
    # demo budget: a few expanded questions per cell
    "expand.short_multi.object", "expand.short_multi.scene",
    "expand.medium.single.object", "expand.medium.single.scene",
    "expand.medium.multi.object", "expand.medium.multi.scene",
    "expand.long.single.object", "expand.long.single.scene",
    "expand.long.multi.object", "expand.long.multi.scene",
    # demo budget; the sample ships every VNBench part
    "vnbench.max_haystack_s", "vnbench.include_act",
    # names the sample
    "release.title",
    # demo budget: the CPU baselines see fewer frames
    "evaluate.max_frames",
})


def _raw_params() -> dict[str, Any]:
    data = yaml.safe_load(PARAMS_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _field_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """A model's own field defaults (required fields, such as a program's name, left out)."""
    return {name: field.get_default(call_default_factory=True)
            for name, field in model.model_fields.items() if not field.is_required()}


def _overrides(raw: dict[str, Any], parsed: BaseModel, defaults: dict[str, Any],
               where: str = "") -> dict[str, bool]:
    """Each leaf key of ``raw`` (dotted) -> whether its value differs from its default.

    Nested sections are compared key by key against the default section; a list replaces the
    default list as a whole (one leaf), and each of its items must itself restate no default
    of its model (a required key, such as a program's name, is no default).
    """
    found: dict[str, bool] = {}
    for key, value in raw.items():
        path, got = f"{where}{key}", getattr(parsed, key)
        if key not in defaults:  # a required key (a program's name) restates nothing
            found[path] = True
            continue
        if isinstance(value, dict) and isinstance(got, BaseModel):
            default = defaults[key]
            found |= _overrides(value, got, dict(default), f"{path}.")
            continue
        found[path] = got != defaults[key]
        if isinstance(value, list):
            for index, (item, item_got) in enumerate(zip(value, got, strict=True)):
                if isinstance(item, dict) and isinstance(item_got, BaseModel):
                    inner = _overrides(item, item_got, _field_defaults(type(item_got)),
                                       f"{path}.{index}.")
                    restated = sorted(k for k, differs in inner.items() if not differs)
                    assert not restated, f"params.yaml restates defaults: {restated}"
    return found


def test_defaults_and_repo_params_file_validate() -> None:
    assert Params().ingest.required_scopes == ["benchmark"]
    assert load_params(PARAMS_FILE).studio.programs
    assert Params().evaluate.max_frames == EvaluateParams().max_frames == 64


def test_params_yaml_holds_only_documented_differences_from_the_defaults() -> None:
    """No default is restated (the models own them all), every key is known, and the keys
    set are exactly SAMPLE_OVERRIDES."""
    raw = _raw_params()
    parsed = resolve_params(PARAMS_FILE)  # unknown keys would raise ParamsError, naming them
    found = _overrides(raw, parsed, dict(Params()))
    restated = sorted(k for k, differs in found.items() if not differs)
    assert not restated, f"params.yaml restates defaults of the models: {restated}"
    assert set(found) == SAMPLE_OVERRIDES, (
        f"new overrides: {sorted(set(found) - SAMPLE_OVERRIDES)}; "
        f"gone: {sorted(SAMPLE_OVERRIDES - set(found))}")


def test_every_params_section_dvc_lists_is_in_params_yaml() -> None:
    """DVC refuses a stage whose listed params are missing; ``{}`` keeps a section present."""
    raw = _raw_params()
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    listed = {entry for stage in stages.values() for entry in stage.get("params", [])
              if isinstance(entry, str)}
    assert listed
    for entry in sorted(listed):
        node: Any = raw
        for part in entry.split("."):
            assert isinstance(node, dict) and part in node, f"dvc.yaml lists {entry!r}"
            node = node[part]
    assert all(isinstance(v, dict) for v in raw.values())  # a section may be {}, never null


def test_the_demo_recipe_is_what_the_sample_ran_before_the_trim() -> None:
    """Spot checks that trimming restated defaults changed nothing the demo builds."""
    params = resolve_params(PARAMS_FILE)
    program = params.studio.programs[0]
    assert (program.name, program.n_videos, program.video_duration_s) == ("studio-a", 3, 420)
    assert (program.min_scene_s, program.max_scene_s, program.subtitles) == (4, 12, True)
    assert params.studio.valid_until.isoformat() == "2099-12-31"
    assert params.quality.min_piece_s == params.expand.min_piece_s
    assert params.evaluate.max_frames == 16


def test_no_params_file_means_the_defaults_from_the_cli_and_the_flows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one rule (resolve_params): no path is the built-in defaults, even with a
    params.yaml in the working directory, for the CLI and for every flow."""
    from needleforge.cli.main import _params

    (tmp_path / "params.yaml").write_text("evaluate: {max_frames: 3}\nscenes: {backend: opencv}\n")
    monkeypatch.chdir(tmp_path)
    assert resolve_params(None) == Params()
    assert _params(None) == resolve_params(None)
    assert _params(Path("params.yaml")) == resolve_params(Path("params.yaml"))
    assert _params(Path("params.yaml")).evaluate.max_frames == 3

    readers = []
    for module in sorted((ROOT / "flows").glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "load_params" not in names, f"{module.name}: use resolve_params"
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Constant)
                    and n.value == "params.yaml"], f"{module.name}: a params.yaml of its own"
        if "resolve_params" in names:
            readers.append(module.stem)
    assert {"evaluate", "expand", "generate", "ingest", "release", "render", "represent",
            "vnbench"} <= set(readers)


def _questions_release(root: Path) -> Path:
    """A release of grounding questions only: the random model reads frame times, no video."""
    root.mkdir(parents=True)
    rows = [{"question_id": f"g{i}", "family": "nemo", "task": "object_grounding",
             "question": "When does the red car appear?", "video": f"videos/g{i}.mp4",
             "duration_s": 120.0, "bucket": "short", "needle_type": "object", "n_needles": 1,
             "answer_spans": [[10.0 * i, 10.0 * i + 8]]} for i in range(3)]
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _flow_max_frames(release: Path, out: Path, params_path: Path | None,
                     monkeypatch: pytest.MonkeyPatch) -> int:
    """The evaluate flow's body, its tasks called as plain functions (no Prefect API)."""
    import flows.evaluate as flow_module

    for name in ("answer_task", "score_task"):
        task = getattr(flow_module, name)
        monkeypatch.setattr(flow_module, name, getattr(task, "fn", task))
    flow_module.evaluate_flow.fn(release, models=("random",), out=out, params_path=params_path)
    meta = json.loads((out / "predictions" / "random.jsonl.meta.json").read_text())
    return int(meta["max_frames"])


def _cli_max_frames(release: Path, out: Path, args: list[str]) -> int:
    from needleforge.cli import app

    result = CliRunner().invoke(app, ["evaluate", "--release", str(release), "--model",
                                      "random", "--out-dir", str(out), *args])
    assert result.exit_code == 0, result.output
    return int(json.loads((out / "random.jsonl.meta.json").read_text())["max_frames"])


def test_evaluate_section_is_read_by_the_cli_and_the_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = _questions_release(tmp_path / "release")
    params = tmp_path / "p.yaml"
    params.write_text("evaluate: {max_frames: 3}\n")
    (tmp_path / "params.yaml").write_text("evaluate: {max_frames: 5}\n")  # never read implicitly
    monkeypatch.chdir(tmp_path)

    assert _cli_max_frames(release, tmp_path / "c1", ["--params", str(params)]) == 3
    assert _flow_max_frames(release, tmp_path / "f1", params, monkeypatch) == 3
    assert _cli_max_frames(release, tmp_path / "c2", []) == 64
    assert _flow_max_frames(release, tmp_path / "f2", None, monkeypatch) == 64
    # --max-frames still overrides the params file.
    assert _cli_max_frames(release, tmp_path / "c3", ["--params", str(params),
                                                      "--max-frames", "7"]) == 7


@pytest.mark.parametrize(("text", "message"), [
    ("evaluate: {max_frames: 0}\n", "evaluate.max_frames: Input should be greater than or equal"),
    ("evaluate: {max_frame: 16}\n", "unknown key 'evaluate.max_frame'"),
    ("evaluate: {max_frames: many}\n", "evaluate.max_frames"),
])
def test_bad_evaluate_params_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        resolve_params(path)
    assert message in str(err.value) and str(path) in str(err.value)
    release = _questions_release(tmp_path / "release")
    from needleforge.cli import app

    result = CliRunner().invoke(app, ["evaluate", "--release", str(release), "--model",
                                      "random", "--params", str(path), "--max-frames", "4"])
    assert result.exit_code == 2 and message in result.output  # refused even when overridden
    assert not (release / "predictions").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ingset": {}}, "unknown key 'ingset'"),
        ({"ingest": {"link_mod": "copy"}}, "unknown key 'ingest.link_mod'"),
        ({"ingest": {"link_mode": "teleport"}}, "ingest.link_mode"),
        ({"nemo": {"check": {"instance_search": "fast"}}}, "nemo.check.instance_search"),
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
