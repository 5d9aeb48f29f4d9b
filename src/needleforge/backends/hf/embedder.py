"""Local CLIP-like transformers models as image embedders (``hf`` backend of the needle filter).

VNBench filters needle images with CLIP image similarity (seed 000, Sec. 3.3). Any
``save_pretrained`` folder of a model with ``get_image_features`` works (CLIP, SigLIP,
Chinese-CLIP, …): the image features are the projected embedding that CLIP's contrastive
training makes comparable by cosine. Nothing is downloaded (``local_files_only``).

Images go through the folder's image processor in its Pillow flavour (``backend="pil"``):
PyPI's torchvision does not import beside every torch build (see
:mod:`needleforge.backends.hf.tagger`).
In transformers 5 ``get_image_features`` returns a model output whose ``pooler_output`` holds
the projected features; older versions return the tensor itself. Both are accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.embedding import Embeddings, normalize_rows
from needleforge.backends.hf.model_dir import backend_name, model_version, require_model_dir
from needleforge.backends.local_files import check_device
from needleforge.errors import BackendError


class HfClipEmbedder:
    """Embeds RGB images with a local CLIP-like model's image features.

    Args:
        model_dir: a ``save_pretrained`` folder with ``config.json``, weights and
            ``preprocessor_config.json``.
        device: torch device (``cpu``, ``cuda``, ``cuda:1``, ``mps``).
        batch_size: images per forward pass.

    Raises:
        BackendError: for a bad batch size or device, a missing folder, config or weights, a
            folder without an image processor, or a model without ``get_image_features``.
    """

    def __init__(self, model_dir: Path | str, *, device: str = "cpu", batch_size: int = 16
                 ) -> None:
        if batch_size < 1:
            raise BackendError(f"batch_size = {batch_size!r} must be >= 1")
        folder = require_model_dir(model_dir)
        self.device = check_device(device)
        self.batch_size = batch_size
        self._processor, self._model = _load(folder, self.device)
        self.name: str = backend_name(folder)
        self.version: str = model_version(folder)

    def embed(self, images: Sequence[RGBImage]) -> Embeddings:
        """One unit-length row per image, in input order.

        Raises:
            BackendError: when an image is not a uint8 HxWx3 array.
        """
        rgbs = [ensure_rgb(image) for image in images]
        if not rgbs:
            dim = int(getattr(self._model.config, "projection_dim", 0) or 0)
            return np.zeros((0, dim), dtype=np.float32)
        rows = [self._batch(rgbs[i: i + self.batch_size])
                for i in range(0, len(rgbs), self.batch_size)]
        return normalize_rows(np.concatenate(rows, axis=0))

    def _batch(self, rgbs: Sequence[RGBImage]) -> np.ndarray[Any, np.dtype[np.float64]]:
        import torch

        pictures = [Image.fromarray(rgb) for rgb in rgbs]
        inputs = self._processor(images=pictures, return_tensors="pt")
        pixels = inputs["pixel_values"].to(device=self.device, dtype=self._model.dtype)
        with torch.inference_mode():
            output = self._model.get_image_features(pixel_values=pixels)
        features = output if isinstance(output, torch.Tensor) else output.pooler_output
        return np.asarray(features.float().cpu().numpy(), dtype=np.float64)


def _load(folder: Path, device: str) -> tuple[Any, Any]:
    """The folder's Pillow image processor and model (eval mode, on ``device``)."""
    try:
        from transformers import AutoImageProcessor, AutoModel
    except ImportError as exc:
        raise BackendError(f"the hf embedder needs transformers: pip install transformers "
                           f"({exc})") from exc
    auto_processor: Any = AutoImageProcessor  # untyped in transformers
    try:
        processor = auto_processor.from_pretrained(folder, backend="pil", local_files_only=True)
    except (OSError, ValueError, ImportError) as exc:
        raise BackendError(
            f"{folder} has no usable image processor (preprocessor_config.json): {exc}"
        ) from exc
    try:
        model: Any = AutoModel.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise BackendError(f"{folder} is not a loadable transformers model: {exc}") from exc
    if not callable(getattr(model, "get_image_features", None)):
        raise BackendError(f"{folder} holds a {type(model).__name__}, which has no "
                           "get_image_features (expected a CLIP-like model)")
    return processor, model.eval().to(device)
