"""RAM++ loading: every refused checkpoint and every library failure is one named error.

The checkpoints are real ``torch.save`` files whose tensors live on torch's meta device: they
have RAM++ Swin-L's names and shapes (read from the ``ram`` source) and weigh a few kB. The
``ram`` package is ``ram_standin/`` (same module names and call shapes, tags from the image's
colour, prints like the real one, fails on demand like a mismatched library): imported in this
process, or run by the real worker script in a second, real Python environment built here with
``venv`` (what ``make ram-env`` builds, minus RAM++'s heavy dependencies).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from typer.testing import CliRunner

from needleforge.backends.local_files import fingerprint
from needleforge.backends.ram_checkpoint import (
    SIGNATURE,
    RamLoadError,
    check_signature,
    fit_state_dict,
    read_checkpoint,
)
from needleforge.backends.ram_plus import RamPlusTagger
from needleforge.errors import BackendError

STANDIN = Path(__file__).parent / "ram_standin"
TABLE = "visual_encoder.layers.0.blocks.0.attn.relative_position_bias_table"
INDEX = "visual_encoder.layers.0.blocks.0.attn.relative_position_index"
QKV = "visual_encoder.layers.0.blocks.0.attn.qkv.weight"
#: The stand-in model's tensors: RAM++'s signature, one block's table and index, one weight.
MODEL_SHAPES: dict[str, tuple[int, ...]] = {**SIGNATURE, TABLE: (529, 6), INDEX: (144, 144),
                                            QKV: (576, 192)}


def meta(shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    return {k: torch.empty(s, device="meta") for k, s in shapes.items()}


def saved(path: Path, checkpoint: object) -> Path:
    torch.save(checkpoint, path)
    return path


def frame(rgb: tuple[int, int, int]) -> np.ndarray:
    return np.full((90, 160, 3), rgb, dtype=np.uint8)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """A checkpoint holding every tensor of the stand-in model, RAM++'s shapes."""
    return saved(tmp_path / "ram_plus.pth", {"model": meta(MODEL_SHAPES)})


@pytest.fixture
def standin_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The stand-in ``ram`` importable in this process (and forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(STANDIN))
    monkeypatch.delenv("RAM_STANDIN_FAIL", raising=False)
    yield
    for name in [m for m in sys.modules if m == "ram" or m.startswith("ram.")]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def standin_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second Python environment: a real venv whose site-packages reach this one's
    (torch, numpy, Pillow, transformers) and the stand-in ``ram`` through a ``.pth`` file."""
    root = tmp_path_factory.mktemp("ram-env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                              "get_paths()['purelib'])"], check=True, capture_output=True,
                             text=True).stdout.strip()
    Path(purelib, "standin.pth").write_text(
        f"{STANDIN}\n{sysconfig.get_paths()['purelib']}\n", encoding="utf-8")
    return python


# --- checkpoints, before anything is built -----------------------------------------------


def test_a_full_signature_passes_and_the_old_head_name_is_accepted(good: Path) -> None:
    assert set(read_checkpoint(good)) == set(MODEL_SHAPES)
    renamed = {k.replace("tagging_head.", "vision_multi.", 1): v
               for k, v in meta(MODEL_SHAPES).items()}
    check_signature(renamed, where="checkpoint x")


BAD_CHECKPOINTS: dict[str, tuple[object, str]] = {
    "empty": ({"model": {}}, r"its 'model' state dict is empty \(no weights at all\)"),
    "bare": (meta(MODEL_SHAPES), r"is a bare state dict \(12 tensors, e\.g\. 'label_embed'\); "
                                 r"RAM\+\+ checkpoints hold it under 'model'"),
    "partial": ({"model": meta({k: s for k, s in MODEL_SHAPES.items()
                                if k not in ("label_embed", "fc.weight")})},
                r"is not a RAM\+\+ Swin-L checkpoint: it lacks 2 of its tensors "
                r"\(label_embed, fc\.weight\); it holds 10 tensors"),
    "swin-b": ({"model": meta({**MODEL_SHAPES, "image_proj.weight": (512, 1024)})},
               r"does not fit RAM\+\+ Swin-L: image_proj\.weight has shape \(512, 1024\), "
               r"not \(512, 1536\)"),
    "not-a-tensor": ({"model": {**meta(MODEL_SHAPES), "label_embed": [0.0]}},
                     r"label_embed is a list, not a tensor"),
    "no-model-key": ({"state_dict": meta(MODEL_SHAPES), "epoch": 3},
                     r"has no 'model' state dict \(its keys: 'state_dict', 'epoch'\)"),
    "model-not-dict": ({"model": [1, 2]}, r"'model' is a list, not a state dict"),
    "a-list": ([meta(MODEL_SHAPES)], r"holds a list, not RAM\+\+'s \{'model': state_dict\}"),
}


@pytest.mark.parametrize("case", sorted(BAD_CHECKPOINTS))
def test_each_refused_checkpoint_shape_is_named(case: str, tmp_path: Path) -> None:
    checkpoint, says = BAD_CHECKPOINTS[case]
    path = saved(tmp_path / f"{case}.pth", checkpoint)
    with pytest.raises(RamLoadError, match=says) as info:
        read_checkpoint(path)
    assert str(info.value).startswith(f"checkpoint {path}")


@pytest.mark.parametrize(("content", "says"), [
    (b"hello\n", "is a text file (6 bytes), not a PyTorch checkpoint"),
    (b"", "is empty (0 bytes), not a PyTorch checkpoint"),
    (b"\x1b[31mnot torch\x1b[0m" * 40, "is a text file (720 bytes), not a PyTorch checkpoint"),
    (b"<!DOCTYPE html>\n<html><body>Sign in</body></html>\n", "is an HTML page, not a "
     "PyTorch checkpoint (a download that saved an error or sign-in page?)"),
    (bytes(range(1, 200)) * 3, "is not a PyTorch checkpoint (neither the zip archive nor "
     "the pickle torch writes)"),
    (b"PK\x03\x04 half a zip", "is not a PyTorch checkpoint RAM++ can read: torch cannot "
     "load it (a damaged or partial download?)"),
])
def test_a_file_that_is_not_a_checkpoint_is_named(content: bytes, says: str,
                                                  tmp_path: Path) -> None:
    """What the file is, in words, never torch's own error text (kept as the cause)."""
    path = tmp_path / "ram_plus_swin_large_14m.pth"
    path.write_bytes(content)
    with pytest.raises(RamLoadError) as info:
        read_checkpoint(path)
    assert str(info.value) == f"checkpoint {path} {says}"
    assert "\x1b" not in str(info.value) and "torch.load" not in str(info.value)


def test_fitting_renames_resizes_drops_and_lists_what_does_not_fit() -> None:
    resized: list[tuple[int, str]] = []

    def resize(table: Any, rows: int, name: str) -> Any:
        resized.append((rows, name))
        return torch.empty(rows, table.shape[1], device="meta")

    model = meta({**MODEL_SHAPES, TABLE: (169, 6)})  # built at 224: window 7
    checkpoint = {k.replace("tagging_head.", "vision_multi.", 1): v
                  for k, v in meta(MODEL_SHAPES).items()}
    checkpoint["text_encoder.extra.weight"] = torch.empty(3, device="meta")  # training-only
    fitted = fit_state_dict(checkpoint, model, resize_table=resize, window_size=7, where="ck")
    assert resized == [(169, TABLE)]
    assert INDEX not in fitted  # recomputed by the model
    assert "tagging_head.encoder.layer.1.output.dense.weight" in fitted
    del checkpoint[QKV], checkpoint["fc.weight"]
    checkpoint["wordvec_proj.weight"] = torch.empty(768, 256, device="meta")
    with pytest.raises(RamLoadError, match=r"^ck does not fit the RAM\+\+ model: it lacks 2 of "
                                           r"the model's 12 tensors \(fc\.weight, .*qkv\.weight"
                                           r"\); 1 tensors have other shapes \(wordvec_proj\."
                                           r"weight: \(768, 256\) instead of \(768, 512\)\)"):
        fit_state_dict(checkpoint, model, resize_table=resize, window_size=7, where="ck")


# --- in this process, with the stand-in ram ----------------------------------------------


@pytest.mark.usefixtures("standin_here")
def test_the_stand_in_loads_strictly_and_tags_without_printing(
    good: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    filters = list(warnings.filters)
    tagger = RamPlusTagger(good)
    assert [t.tag for t in tagger.tag(frame((250, 5, 5)))] == ["red", "stand-in", "size 384"]
    assert tagger.version.startswith("ram-unversioned+ckpt.")
    assert capsys.readouterr() == ("", "")  # ram's prints were captured
    assert warnings.filters == filters  # and its "ignore every warning" undone
    small = RamPlusTagger(good, image_size=224)
    assert [t.tag for t in small.tag(frame((5, 5, 250)))][::2] == ["blue", "size 224"]
    from ram.models.swin_transformer import RESIZED  # type: ignore[import-not-found]

    assert RESIZED == [(TABLE, 529), (TABLE, 169)]  # as ram does: sized for the window


@pytest.mark.usefixtures("standin_here")
def test_a_checkpoint_missing_a_model_tensor_is_refused_after_the_build(
    tmp_path: Path,
) -> None:
    partial = saved(tmp_path / "p.pth", {"model": meta({k: s for k, s in MODEL_SHAPES.items()
                                                        if k != QKV})})
    with pytest.raises(BackendError, match=rf"RAM\+\+ tagger unavailable: checkpoint {partial} "
                                           rf"does not fit the RAM\+\+ model: it lacks 1 of the "
                                           rf"model's 12 tensors \({QKV}\)"):
        RamPlusTagger(partial)


FAILURES = {
    "import-runtime": r"ram\.models\.ram_plus does not import: RuntimeError: operator "
                      r"torchvision::nms does not exist; torchvision does not match the "
                      r"installed torch .*make ram-env",
    "import-transformers": r"ram\.models\.ram_plus does not import: ImportError: cannot import "
                           r"name 'apply_chunking_to_forward'.*RAM\+\+'s code needs "
                           r"transformers 4\.x.*\(found: transformers 5\.",
    "import-missing": r"RAM\+\+ needs 'fairscale_is_not_installed_here', which is not "
                      r"installed; run RAM\+\+ in its own environment: `make ram-env`",
    "build-attribute": r"the RAM\+\+ model cannot be built: AttributeError: 'BertModel' object "
                       r"has no attribute 'all_tied_weights_keys'; RAM\+\+'s code needs "
                       r"transformers 4\.x",
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
@pytest.mark.usefixtures("standin_here")
def test_each_library_failure_is_one_named_error(
    kind: str, good: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAM_STANDIN_FAIL", kind)
    with pytest.raises(BackendError, match=r"^RAM\+\+ tagger unavailable: " + FAILURES[kind]):
        RamPlusTagger(good)
    assert capsys.readouterr() == ("", "")


@pytest.mark.usefixtures("standin_here")
def test_the_checkpoint_is_checked_before_ram_is_imported(tmp_path: Path) -> None:
    bad = saved(tmp_path / "bad.pth", {"model": {}})
    with pytest.raises(BackendError, match="state dict is empty"):
        RamPlusTagger(bad)
    assert "ram.models.ram_plus" not in sys.modules


# --- in a second environment, through the worker process ---------------------------------


def test_the_worker_in_another_environment_tags_and_stops(
    good: Path, standin_python: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tagger = RamPlusTagger(good, python=standin_python, timeout_s=60)
    sidecar = tagger.sidecar
    assert sidecar is not None and sidecar.ready["ready"] is True
    assert tagger.version == RamPlusTagger.with_model_call(
        lambda _: ["x"], version=f"ram-unversioned+ckpt.{fingerprint([good])}").version
    for rgb, colour in (((250, 5, 5), "red"), ((5, 240, 5), "green"), ((255, 255, 255), "white")):
        assert [t.tag for t in tagger.tag(frame(rgb))] == [colour, "stand-in", "size 384"]
    out, err = capfd.readouterr()
    assert "stand-in ram" not in out + err  # the worker's prints stay in the pipe
    tagger.close()
    assert not sidecar.alive


def test_the_worker_reports_library_failures_as_one_error(
    good: Path, standin_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind = "import-runtime"  # the others take the same path (in-process tests cover them)
    monkeypatch.setenv("RAM_STANDIN_FAIL", kind)
    with pytest.raises(BackendError, match=r"^RAM\+\+ worker did not load: " + FAILURES[kind]):
        RamPlusTagger(good, python=standin_python)


def test_the_worker_refuses_a_bad_checkpoint_by_name(
    tmp_path: Path, standin_python: Path
) -> None:
    bare = saved(tmp_path / "bare.pth", meta(MODEL_SHAPES))
    with pytest.raises(BackendError, match=rf"^RAM\+\+ worker did not load: checkpoint "
                                           rf"{bare.resolve()} is a bare state dict"):
        RamPlusTagger(bare, python=standin_python)


def test_a_missing_environment_is_named_with_the_other_needs(tmp_path: Path) -> None:
    with pytest.raises(BackendError) as info:
        RamPlusTagger(tmp_path / "none.pth", python=tmp_path / ".venv-ram/bin/python")
    message = str(info.value)
    assert (f"python {tmp_path}/.venv-ram/bin/python (RAM++'s own environment) does not "
            "exist: build it with `make ram-env`") in message
    assert f"checkpoint {tmp_path}/none.pth does not exist" in message


# --- the CLI ------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["worker", "here"])
def test_represent_with_a_bad_checkpoint_exits_2_with_one_message(
    where: str, tmp_path: Path, standin_python: Path
) -> None:
    from needleforge.cli import app

    text = tmp_path / "ram_plus_swin_large_14m.pth"
    text.write_text("<html>404 Not Found</html>\n")
    options: dict[str, str] = {"checkpoint": str(text)}
    if where == "worker":
        options["python"] = str(standin_python)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"objects": {"tagger": "ram_plus",
                                                  "tagger_options": options}}))
    result = CliRunner().invoke(app, ["represent", "--db", str(tmp_path / "nf.duckdb"),
                                      "--params", str(params)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: RAM++ "), result.output
    if where == "worker":
        assert f"checkpoint {text.resolve()} is an HTML page, not a PyTorch checkpoint" \
            in lines[0]
    else:  # this environment has transformers 5 and no ram: the way out is named
        assert "make ram-env" in lines[0]


def test_a_checkpoint_torch_cannot_read_is_one_line_and_the_worker_says_why_in_the_log(
    tmp_path: Path, standin_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that starts like a checkpoint but is not one reaches ``torch.load`` in the
    worker: the line says what the user can act on, the log keeps the worker's traceback."""
    from needleforge.cli import app

    log = tmp_path / "debug.log"
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(log))
    checkpoint = tmp_path / "ram_plus_swin_large_14m.pth"
    checkpoint.write_bytes(b"PK\x03\x04 half a zip")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"objects": {"tagger": "ram_plus", "tagger_options": {
        "checkpoint": str(checkpoint), "python": str(standin_python)}}}))
    result = CliRunner().invoke(app, ["represent", "--db", str(tmp_path / "nf.duckdb"),
                                      "--params", str(params)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: RAM++ worker did not load: checkpoint {checkpoint} is not a "
                     "PyTorch checkpoint RAM++ can read: torch cannot load it (a damaged or "
                     f"partial download?) (details: {log})"]
    logged = log.read_text()
    assert "WorkerOutput: RAM++ worker's last output:" in logged
    assert "RamLoadError" in logged and "Traceback" in logged


def test_the_stand_in_environment_is_separate(standin_python: Path) -> None:
    """The worker's Python is the venv's, not this one: what ``python=`` promises."""
    out = subprocess.run([str(standin_python), "-I", "-c", "import sys, ram; "
                          "print(sys.prefix, ram.__file__)"], check=True, capture_output=True,
                         text=True, env={**os.environ}).stdout.split()
    assert out[0] != sys.prefix and out[1].startswith(str(STANDIN))


@pytest.mark.usefixtures("standin_here")
def test_the_worker_protocol_line_by_line(good: Path) -> None:
    """``serve`` itself: a ready line, then one reply per request, bad requests included."""
    import io
    import json

    from needleforge.backends.ram_worker import serve
    from needleforge.backends.sidecar import png_base64

    requests = [{"id": 1, "png": png_base64(frame((250, 5, 5)))},  # 160x90: resized there
                {"id": 2, "png": base64_text(b"not an image")},
                {"id": 3}]
    stdin = io.StringIO("".join(json.dumps(r) + "\n" for r in requests) + "\nnot json\n")
    stdout = io.StringIO()
    status = serve(["--checkpoint", str(good), "--bert-dir", str(_bert_dir())],
                   stdin=stdin, stdout=stdout)
    ready, *replies = (json.loads(line) for line in stdout.getvalue().splitlines())
    assert status == 0 and ready["ready"] is True and ready["version"] == "ram-unversioned"
    assert "torch" in ready["libraries"] and ready["load_s"] >= 0
    assert replies[0] == {"id": 1, "english": "red | stand-in | size 384"}
    assert replies[1]["id"] == 2 and "not a PNG image" in replies[1]["error"]
    assert replies[2] == {"id": 3, "error": "bad request: KeyError: 'png'"}
    assert replies[3]["error"].startswith("bad request: JSONDecodeError")
    empty = saved(good.parent / "empty.pth", {"model": {}})
    stdout = io.StringIO()
    assert serve(["--checkpoint", str(empty), "--bert-dir", str(_bert_dir())],
                 stdin=io.StringIO(""), stdout=stdout) == 2
    assert json.loads(stdout.getvalue())["ready"] is False


def base64_text(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _bert_dir() -> Path:
    from needleforge.backends.ram_plus import default_bert_dir

    return default_bert_dir()
