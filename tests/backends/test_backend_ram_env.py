"""RAM++ for real, in its own environment (``make ram-env``): slow, and skipped without it.

The public RAM++ checkpoint (3 GB) cannot be downloaded here, so the test builds RAM++ Swin-L
with ``ram``'s own code in that environment (random weights, our local tokenizer swap) and
saves it as a checkpoint: the load path is the one the real file takes. Then the CLI runs as a
user would: ``needleforge ingest`` a real clip, ``needleforge represent`` with
``objects.tagger: ram_plus`` and ``tagger_options: {python: .venv-ram/bin/python}``.
``NEEDLEFORGE_RAM_PYTHON`` points at another RAM++ environment's interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from needleforge.backends import ram_worker
from needleforge.backends.ram_plus import RamPlusTagger, default_bert_dir
from needleforge.store import Store

ROOT = Path(__file__).resolve().parents[2]
RAM_PYTHON = Path(os.environ.get("NEEDLEFORGE_RAM_PYTHON") or ROOT / ".venv-ram/bin/python")
LICENCE = {"program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
           "scope": ["benchmark"], "valid_until": "2099-01-01"}
#: Builds RAM++ Swin-L (random weights) with the worker's own code and saves its state dict.
BUILD = """
import runpy, sys, torch
worker = runpy.run_path(sys.argv[1])
torch.manual_seed(0)
module = worker["import_ram_plus"]()
model = worker["build_model"](module, bert_dir=sys.argv[2], image_size=384)
torch.save({"model": model.state_dict()}, sys.argv[3])
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not RAM_PYTHON.is_file(),
                       reason=f"no RAM++ environment at {RAM_PYTHON}: build it with `make "
                              "ram-env` (or set NEEDLEFORGE_RAM_PYTHON)"),
]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A RAM++ Swin-L checkpoint with random weights (1.3 GB), built in the RAM++ env."""
    path = tmp_path_factory.mktemp("ram") / "ram_plus_random.pth"
    subprocess.run([str(RAM_PYTHON), "-I", "-W", "ignore", "-c", BUILD, ram_worker.__file__,
                    str(default_bert_dir()), str(path)], check=True, capture_output=True,
                   timeout=900)
    return path


def test_the_worker_loads_ram_plus_and_tags_a_photo(checkpoint: Path, chelsea: object) -> None:
    started = time.monotonic()
    tagger = RamPlusTagger(checkpoint, python=RAM_PYTHON)
    loaded_s = time.monotonic() - started
    assert tagger.sidecar is not None
    libraries = tagger.sidecar.ready["libraries"]
    assert libraries["transformers"].startswith("4.") and "ram" in libraries
    assert tagger.version.startswith("ram-0.0.1+ckpt.")
    started = time.monotonic()
    tags = tagger.tag(chelsea)  # type: ignore[arg-type]
    per_image_s = time.monotonic() - started
    assert all(t.score == 1.0 for t in tags)  # random weights: which tags, if any, is noise
    print(json.dumps({"load_s": round(loaded_s, 1), "per_image_s": round(per_image_s, 2),
                      "libraries": libraries}))
    tagger.close()


def test_represent_runs_ram_plus_in_its_environment(
    checkpoint: Path, media_dir: Path, tmp_path: Path
) -> None:
    from needleforge.cli import app

    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(media_dir / "bars.mp4", lib / "bars.mp4")
    manifest = lib / "m.yaml"
    manifest.write_text(yaml.safe_dump({"sources": [{"path": "bars.mp4", **LICENCE}]}))
    db = tmp_path / "nf.duckdb"
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"objects": {"tagger": "ram_plus", "tagger_options": {
        "checkpoint": str(checkpoint), "python": str(RAM_PYTHON)}}}))
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(manifest), "--db", str(db)]).exit_code == 0
    result = runner.invoke(app, ["represent", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 0, result.output
    assert "1 video(s) represented, 0 already current, 0 failed" in result.output
    assert "Position interpolate" not in result.output and "load checkpoint" not in result.output
    with Store(db, read_only=True) as store:  # RAM++'s tags, when the noise gives some
        versions = {t.model_version for t in store.scene_tags() if t.backend == RamPlusTagger.name}
    assert all(v.startswith("ram-0.0.1+ckpt.") for v in versions)
