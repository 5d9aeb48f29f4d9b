"""RAM++ model code that runs in whichever environment holds RAM++'s dependencies.

RAM++'s ``ram`` package needs transformers 4.x (its BERT code fails on 5.x), timm 0.4.12,
fairscale and a torchvision built for the installed torch; the main environment keeps
transformers 5. So this module is usable two ways:

* imported by :mod:`needleforge.backends.ram_plus` when ``ram`` imports in the main
  environment (:func:`load_generate_tag`);
* run as a script by the RAM++ environment's Python (``make ram-env`` builds ``.venv-ram``):
  ``python -I ram_worker.py --checkpoint F --bert-dir D --image-size 384 --device cpu``
  loads the model and then answers JSON lines on stdin/stdout (:func:`serve`).

It therefore imports nothing of needleforge but the file beside it,
:mod:`~needleforge.backends.ram_checkpoint`, and nothing heavy at import (numpy, Pillow, torch
and ``ram`` are imported inside the functions that need them).

Loading checks everything before use, and every failure is a ``RamLoadError`` naming what
is missing: the checkpoint is read and its keys and tensor shapes checked against RAM++
Swin-L's (:mod:`~needleforge.backends.ram_checkpoint`) before ``ram`` is imported (an import
and build take 15–60 s); ``ram`` is imported and the model built with ``ram``'s prints
captured; the checkpoint is then matched against the built model tensor by tensor and loaded
strictly (``ram``'s own loader
uses ``strict=False`` and would silently keep random weights for every missing tensor).

Protocol (one UTF-8 JSON object per line; the worker's stdout carries nothing else — anything
``ram``, torch or transformers print goes to stderr, which the caller keeps for its errors):

* worker, once loaded: ``{"ready": true, "version": "ram-0.0.1", "load_s": 18.2,
  "libraries": {"torch": "2.8.0", ...}}``, or ``{"ready": false, "error": "..."}`` and exit 2;
* caller: ``{"id": 7, "png": "<base64 PNG of the RGB frame, already S×S>"}``;
* worker: ``{"id": 7, "english": "dog | grass"}``, or ``{"id": 7, "error": "..."}``;
* end of stdin: the worker exits 0.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import importlib
import importlib.metadata
import io
import json
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

if __package__:  # imported as needleforge.backends.ram_worker
    from needleforge.backends.ram_checkpoint import RamLoadError, fit_state_dict, read_checkpoint
else:  # run as a script where needleforge is not installed: the module beside this file
    sys.path.append(str(Path(__file__).resolve().parent))
    from ram_checkpoint import RamLoadError, fit_state_dict, read_checkpoint  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import torch

#: RAM++'s input normalization (ImageNet statistics), as in ``ram.transform.get_transform``.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
RAM_INSTALL_HINT = "pip install git+https://github.com/xinyu1205/recognize-anything.git"
#: How to get an environment where RAM++'s code runs, for error messages.
RAM_ENV_HINT = ("run RAM++ in its own environment: `make ram-env`, then "
                "objects.tagger_options: {python: .venv-ram/bin/python}")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: What importing or building third-party model code raises when a library does not fit
#: (an op missing from a mismatched torchvision, an attribute a newer transformers renamed).
_LIBRARY_ERRORS = (ImportError, RuntimeError, AttributeError, TypeError, ValueError, OSError,
                   KeyError, NameError, AssertionError)

GenerateTag = Callable[["torch.Tensor"], object]


# --- images ------------------------------------------------------------------------------


def resize_rgb(rgb: npt.NDArray[np.uint8], image_size: int) -> npt.NDArray[np.uint8]:
    """``rgb`` (H×W×3 uint8) resized to ``image_size`` square, bilinear, aspect not kept: the
    first step of RAM++'s ``get_transform``, done with Pillow (torchvision may not import)."""
    import numpy as np
    from PIL import Image

    resized = Image.fromarray(rgb).resize((image_size, image_size), Image.Resampling.BILINEAR)
    return np.asarray(resized, dtype=np.uint8)


def normalize(square: npt.NDArray[np.uint8], *, device: str = "cpu") -> torch.Tensor:
    """``(1, 3, S, S)`` float32 tensor: an S×S RGB frame scaled to [0, 1] and normalized with
    ImageNet mean/std, the rest of RAM++'s ``get_transform``."""
    import numpy as np
    import torch

    pixels = np.asarray(square, dtype=np.float32) / 255.0
    mean = np.asarray(IMAGENET_MEAN, dtype=np.float32)
    std = np.asarray(IMAGENET_STD, dtype=np.float32)
    chw = np.ascontiguousarray(((pixels - mean) / std).transpose(2, 0, 1))
    return torch.from_numpy(chw).unsqueeze(0).to(device)


def png_to_rgb(data: bytes) -> npt.NDArray[np.uint8]:
    """An RGB array from PNG bytes. Raises ValueError when they are not an image."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"not a PNG image: {exc}") from exc


# --- importing and building RAM++ --------------------------------------------------------


@contextlib.contextmanager
def captured() -> Iterator[io.StringIO]:
    """Python-level prints and warnings of third-party code kept out of the user's terminal
    (``ram`` prints checkpoint paths and tied weights, and switches every warning off on
    import: the warning filters are restored afterwards)."""
    buffer = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buffer), \
            contextlib.redirect_stderr(buffer):
        warnings.simplefilter("ignore")
        yield buffer


def import_ram_plus() -> ModuleType:
    """``ram.models.ram_plus``, or one error naming what is missing or does not fit.

    Raises:
        RamLoadError: ``ram`` or a dependency is not installed, or a library does not fit
            (a torchvision built for another torch: ``operator torchvision::nms does not
            exist``; transformers 5: ``cannot import name 'apply_chunking_to_forward'``).
    """
    try:
        with captured():
            module = importlib.import_module("ram.models.ram_plus")
    except ModuleNotFoundError as exc:
        if exc.name is not None and (exc.name == "ram" or exc.name.startswith("ram.")):
            raise RamLoadError(f"the 'ram' package (RAM++'s code) is not installed or has no "
                               f"ram.models.ram_plus ({exc}): {RAM_INSTALL_HINT}") from None
        raise RamLoadError(f"RAM++ needs {exc.name!r}, which is not installed; "
                           f"{RAM_ENV_HINT}") from None
    except _LIBRARY_ERRORS as exc:
        raise RamLoadError(f"ram.models.ram_plus does not import: {_described(exc)}; "
                           f"{_library_hint(exc)}") from None
    if not callable(getattr(module, "ram_plus", None)):
        raise RamLoadError("ram.models.ram_plus has no ram_plus() factory; update 'ram'")
    return module


def bert_tokenizer_factory(bert_dir: Path) -> Callable[..., Any]:
    """A replacement for RAM's ``init_tokenizer`` reading ``bert_dir`` (no network).

    RAM++'s constructor loads ``bert-base-uncased`` by hub name only to size its tagging
    head (30,522 words + 2 added tokens); any uncased BERT vocabulary of that size does. It
    mirrors what RAM's own does: a ``[DEC]`` bos token and an ``[ENC]`` token, whose id is
    stored as ``enc_token_id``.
    """

    def init_tokenizer(*_args: object, **_kwargs: object) -> Any:
        from transformers import BertTokenizer

        tokenizer = BertTokenizer.from_pretrained(str(bert_dir), local_files_only=True)
        tokenizer.add_special_tokens({"bos_token": "[DEC]"})
        tokenizer.add_tokens(["[ENC]"], special_tokens=True)
        tokenizer.enc_token_id = tokenizer.convert_tokens_to_ids("[ENC]")
        return tokenizer

    return init_tokenizer


@contextlib.contextmanager
def local_bert_tokenizer(module: ModuleType, bert_dir: Path) -> Iterator[None]:
    """Point ``module.init_tokenizer`` at ``bert_dir`` while RAM++ is being built.

    ``RAM_plus.__init__`` calls the ``init_tokenizer`` it star-imported into its own module, so
    that is the name to replace; the original is restored afterwards. Not thread-safe: build
    taggers one at a time (they are built once per worker anyway).
    """
    original = getattr(module, "init_tokenizer", None)
    setattr(module, "init_tokenizer", bert_tokenizer_factory(bert_dir))  # noqa: B010
    try:
        yield
    finally:
        if original is None:
            delattr(module, "init_tokenizer")
        else:
            setattr(module, "init_tokenizer", original)  # noqa: B010


def build_model(module: ModuleType, *, bert_dir: Path, image_size: int) -> Any:
    """A RAM++ Swin-L with random weights (``ram_plus(pretrained="")``), prints captured.

    Raises:
        RamLoadError: the build fails, e.g. ``'BertModel' object has no attribute
            'all_tied_weights_keys'`` under transformers 5.
    """
    try:
        with captured(), local_bert_tokenizer(module, bert_dir):
            return module.ram_plus(pretrained="", image_size=image_size, vit="swin_l")
    except _LIBRARY_ERRORS as exc:
        raise RamLoadError(f"the RAM++ model cannot be built: {_described(exc)}; "
                           f"{_library_hint(exc)}") from None


def load_generate_tag(checkpoint: Path, *, bert_dir: Path, image_size: int,
                      device: str) -> GenerateTag:
    """RAM++ Swin-L with ``checkpoint``'s weights on ``device``; its ``generate_tag`` (a
    ``(1, 3, S, S)`` batch → ``(english, chinese)`` lists) under ``torch.inference_mode``.

    The checkpoint is read and checked first (seconds), then ``ram`` imported and the model
    built (15–60 s), then every model tensor matched and loaded strictly.

    Raises:
        RamLoadError: naming the checkpoint, library or tensor at fault.
    """
    _check_device(device)
    state = read_checkpoint(checkpoint)
    module = import_ram_plus()
    model = build_model(module, bert_dir=bert_dir, image_size=image_size)
    swin = importlib.import_module("ram.models.swin_transformer")
    window = 12 if image_size == 384 else 7  # ram's configs/swin/config_swinL_{384,224}.json
    try:
        with captured():
            fitted = fit_state_dict(state, model.state_dict(),
                                    resize_table=swin.interpolate_relative_pos_embed,
                                    window_size=window, where=f"checkpoint {checkpoint}")
            model.load_state_dict(fitted, strict=False)
            model = model.eval().to(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise RamLoadError(f"checkpoint {checkpoint} does not load into RAM++: "
                           f"{_described(exc)}") from None
    import torch

    def generate_tag(batch: torch.Tensor) -> object:
        with torch.inference_mode():
            return model.generate_tag(batch)

    return generate_tag


def _check_device(device: str) -> None:
    """Fail before minutes of loading on a device this torch cannot use."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise RamLoadError(f"device = {device!r} is not a torch device ({exc})") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise RamLoadError(f"device = {device!r} but torch {torch.__version__} here has no "
                           "CUDA device")


def ram_version() -> str:
    """``ram-<version>`` of the installed ``ram`` distribution (``ram-unversioned`` if none)."""
    try:
        return "ram-" + importlib.metadata.version("ram")
    except importlib.metadata.PackageNotFoundError:
        return "ram-unversioned"


def _library_hint(exc: BaseException) -> str:
    text = str(exc)
    if "torchvision::" in text or "torchvision" in text:
        return ("torchvision does not match the installed torch (install the torchvision "
                f"built for it), or {RAM_ENV_HINT}")
    versions = {}
    for name in ("transformers", "timm", "torch"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    found = ", ".join(f"{k} {v}" for k, v in versions.items())
    return (f"RAM++'s code needs transformers 4.x, timm 0.4.12 and fairscale (found: "
            f"{found or 'none of them'}); {RAM_ENV_HINT}")


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of an error's text, without terminal colour codes."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__




# --- the worker ---------------------------------------------------------------------------


def serve(argv: list[str] | None = None, *, stdin: TextIO | None = None,
          stdout: TextIO | None = None) -> int:
    """Load RAM++, say ready (or why not), then tag one PNG per input line until EOF.

    Only protocol lines reach ``stdout``: when it is the process's own, file descriptor 1 is
    pointed at stderr first, so prints from C code and libraries cannot corrupt the protocol.
    Returns the exit status: 0 after EOF, 2 when the model does not load.
    """
    args = _parser().parse_args(argv)
    out = stdout if stdout is not None else _protocol_stdout()
    source = stdin if stdin is not None else sys.stdin
    started = time.monotonic()
    try:
        generate_tag = load_generate_tag(args.checkpoint, bert_dir=args.bert_dir,
                                         image_size=args.image_size, device=args.device)
    except RamLoadError as exc:
        traceback.print_exception(exc, file=sys.stderr)  # the library's words, for the log
        _send(out, {"ready": False, "error": str(exc)})
        return 2
    _send(out, {"ready": True, "version": ram_version(),
                "load_s": round(time.monotonic() - started, 2),
                "libraries": _library_versions()})
    for line in source:
        if not line.strip():
            continue
        _send(out, _answer(line, generate_tag, image_size=args.image_size, device=args.device))
    return 0


def _answer(line: str, generate_tag: GenerateTag, *, image_size: int,
            device: str) -> dict[str, Any]:
    """The reply to one request line: the English tags, or what was wrong with it."""
    try:
        request = json.loads(line)
    except ValueError as exc:
        return {"id": None, "error": f"bad request: {_described(exc)}"}
    ident = request.get("id") if isinstance(request, dict) else None
    try:
        rgb = png_to_rgb(base64.b64decode(request["png"], validate=True))
    except (ValueError, KeyError, TypeError) as exc:
        return {"id": ident, "error": f"bad request: {_described(exc)}"}
    if rgb.shape[:2] != (image_size, image_size):
        rgb = resize_rgb(rgb, image_size)
    try:
        with captured():
            result = generate_tag(normalize(rgb, device=device))
    except (RuntimeError, ValueError) as exc:
        return {"id": ident, "error": f"RAM++ failed on the image: {_described(exc)}"}
    english = result[0] if isinstance(result, tuple) else result
    if not isinstance(english, list | tuple) or not english or not isinstance(english[0], str):
        return {"id": ident, "error": f"generate_tag returned {type(result).__name__}"}
    return {"id": ident, "english": english[0]}


def _protocol_stdout() -> TextIO:
    """A private copy of stdout for protocol lines; fd 1 then points at stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    return protocol


def _send(out: TextIO, message: Mapping[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _library_versions() -> dict[str, str]:
    versions = {}
    for name in ("torch", "torchvision", "transformers", "timm", "fairscale", "ram"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return versions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="RAM++ tagging worker (JSON lines).")
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--bert-dir", type=Path, required=True)
    parser.add_argument("--image-size", type=int, choices=(224, 384), default=384)
    parser.add_argument("--device", default="cpu")
    return parser


if __name__ == "__main__":
    sys.exit(serve())
