"""A built release as the Hugging Face Hub and ``datasets`` read it, and a refused one.

``datasets.load_dataset(<folder>)`` is what the Hub runs on a pushed dataset repository: the
README's YAML ``configs`` must name the Parquet files, or it infers splits from folder names
(and ``exports/lmms_eval`` matches its ``*eval/`` pattern). Checked with ``datasets`` 5.x
(``pip install datasets``; a dev dependency), offline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from needleforge.errors import ReleaseError
from needleforge.params import Params
from needleforge.release import build_release
from needleforge.stages.release import read_release_data
from tests.release.consumer_cases import vnbench_choice_records
from tests.release.release_cases import VA, make_store

datasets = pytest.importorskip("datasets")


def vnbench_folder(root: Path, *, skip: tuple[str, ...] = ()) -> Path:
    """A VNBench stage folder (questions.jsonl + one file per sample) whose haystacks come
    from the release store's video VA; the videos are not decoded, so they are empty."""
    root.mkdir(parents=True)
    lines = []
    for r in vnbench_choice_records(samples_per_task=2, seed=6, skip=skip):
        record: dict[str, Any] = {k: v for k, v in r.items() if k != "source_video_ids"}
        record["video"] = f"{r['question_id']}.mp4"
        record["haystack"] = f"{VA}-t0-l30"
        (root / record["video"]).write_bytes(b"")
        lines.append(json.dumps(record))
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hub")
    report = build_release(data=read_release_data(make_store(base / "nf.duckdb")), name="hub",
                           out_root=base / "rel", render_dir=None, params=Params(),
                           vnbench_dir=vnbench_folder(base / "vnbench"))
    return report.path


def test_readme_is_a_dataset_card_with_one_config_per_family(release: Path) -> None:
    text = (release / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert [(c["config_name"], c["data_files"]) for c in header["configs"]] == [
        ("nemo", [{"split": "test", "path": "data/nemo.parquet"}]),
        ("vnbench", [{"split": "test", "path": "data/vnbench.parquet"}])]
    assert header["configs"][0]["default"] is True
    manifest = json.loads((release / "manifest.json").read_text())
    assert {"README.md", "data/nemo.parquet", "data/vnbench.parquet"} <= {
        f["path"] for f in manifest["files"]}


def test_load_dataset_on_the_release_folder(release: Path, tmp_path: Path) -> None:
    records = [json.loads(x) for x in (release / "questions.jsonl").read_text().splitlines()]
    cache = str(tmp_path / "hf-cache")
    nemo = datasets.load_dataset(str(release), cache_dir=cache)
    assert list(nemo) == ["test"]
    assert sorted(nemo["test"]["question_id"]) == sorted(
        r["question_id"] for r in records if r["family"] == "nemo")
    vnbench = datasets.load_dataset(str(release), "vnbench", cache_dir=cache)["test"]
    assert len(vnbench) == sum(r["family"] == "vnbench" for r in records)
    assert set(vnbench["try"]) == {0, 1, 2, 3} and len(vnbench[0]["options"]) == 4
    parquet = datasets.load_dataset("parquet", data_files=str(release / "data/nemo.parquet"),
                                    cache_dir=cache)["train"]
    assert parquet.to_list() == nemo["test"].to_list()


def test_a_release_missing_a_vnbench_type_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    with pytest.raises(ReleaseError, match=r"lacks the official task type.* ord_insert2"):
        build_release(data=read_release_data(make_store(tmp_path / "nf.duckdb")), name="partial",
                      out_root=out, render_dir=None, params=Params(),
                      vnbench_dir=vnbench_folder(tmp_path / "vnbench", skip=("ord_insert2",)))
    assert not (out / "partial").exists()
