"""Local transformers image classifiers as taggers (``hf`` backend).

Any ``save_pretrained`` folder of an image-classification model works (ViT, ConvNeXt, Swin,
EfficientNet, … fine-tuned on ImageNet or on a user's own labels); nothing is downloaded
(``local_files_only``). Tags are the classes of ``config.id2label``, made readable the same
way as the embedded ImageNet tagger's labels ("tabby, tabby cat" → "tabby cat"), so both
backends share one vocabulary. Scores are the softmax over classes, or per-class sigmoids when
``config.problem_type`` is ``multi_label_classification`` (multi-label heads are trained with
independent sigmoids, so a softmax would make their scores compete).

Images are preprocessed by the folder's image processor in its Pillow flavour
(``backend="pil"``): the torchvision flavour is the default in transformers 5, but PyPI's
torchvision does not import beside every torch build, and the two give the same tensors.

The image-text-to-text VLM tagger lives in :mod:`needleforge.backends.hf.vlm`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from needleforge.backends.base import FloatArray, RGBImage, ensure_rgb
from needleforge.backends.embedded.labels import readable_imagenet_label
from needleforge.backends.embedded.tagger import rank_tags
from needleforge.backends.hf.model_dir import backend_name, model_version, require_model_dir
from needleforge.backends.local_files import check_device
from needleforge.errors import BackendError
from needleforge.records import TagScore

MULTI_LABEL = "multi_label_classification"


class HfClassifierTagger:
    """Tags RGB images with a local transformers image classifier.

    Args:
        model_dir: a ``save_pretrained`` folder of an ``AutoModelForImageClassification`` model
            with its image processor (``preprocessor_config.json``).
        top_k: at most this many classes are considered per image, best first.
        score_threshold: classes scoring below this are dropped, in [0, 1].
        device: torch device (``cpu``, ``cuda``, ``cuda:1``, ``mps``).

    Raises:
        BackendError: for bad options or device, a missing folder, config.json or weights
            (the message names the folder and what is missing), a folder that is not an image
            classifier, a missing image processor, or labels that do not cover the outputs.
    """

    def __init__(
        self,
        model_dir: Path | str,
        *,
        top_k: int = 5,
        score_threshold: float = 0.1,
        device: str = "cpu",
    ) -> None:
        if top_k < 1:
            raise BackendError(f"top_k = {top_k!r} must be >= 1")
        if not 0.0 <= score_threshold <= 1.0:
            raise BackendError(f"score_threshold = {score_threshold!r} must be in [0, 1]")
        folder = require_model_dir(model_dir)
        self.device = check_device(device)
        self.top_k = top_k
        self.score_threshold = score_threshold
        self._processor, self._model = _load_classifier(folder, self.device)
        config = self._model.config
        self.multi_label: bool = getattr(config, "problem_type", None) == MULTI_LABEL
        self.class_tags: tuple[str, ...] = class_tags(
            config.id2label, num_labels=int(config.num_labels)
        )
        self.name: str = backend_name(folder)
        self.version: str = model_version(folder)

    def probabilities(self, image: RGBImage) -> FloatArray:
        """One score per class (``config.id2label`` order): softmax, or sigmoids if multi-label.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        rgb = ensure_rgb(image)
        import torch

        inputs = self._processor(images=Image.fromarray(rgb), return_tensors="pt")
        pixels = inputs["pixel_values"].to(device=self.device, dtype=self._model.dtype)
        with torch.inference_mode():
            logits = self._model(pixel_values=pixels).logits[0].float()
        scores = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
        return np.asarray(scores.cpu().numpy(), dtype=np.float64)

    def tag(self, image: RGBImage) -> list[TagScore]:
        """Tags of the ``top_k`` best classes scoring at least ``score_threshold``, best first.

        Two classes with the same readable tag keep the better score.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        return rank_tags(
            self.probabilities(image),
            class_tags=self.class_tags,
            groups={},
            top_k=self.top_k,
            score_threshold=self.score_threshold,
        )


def class_tags(id2label: dict[Any, Any], *, num_labels: int) -> tuple[str, ...]:
    """Readable tag per class index ``0 … num_labels-1`` from a config's ``id2label``.

    Keys may be ints or digit strings (JSON round trips turn them into strings).

    Raises:
        BackendError: when a class index has no label or a label is blank.
    """
    labels = {int(key): str(value) for key, value in id2label.items()}
    missing = [i for i in range(num_labels) if i not in labels]
    if missing:
        raise BackendError(
            f"config.id2label has no label for class(es) {missing[:10]} of {num_labels}"
        )
    tags = tuple(readable_imagenet_label(labels[i]) for i in range(num_labels))
    blank = [i for i, tag in enumerate(tags) if not tag.strip()]
    if blank:
        raise BackendError(f"config.id2label has blank labels for class(es) {blank[:10]}")
    return tags


def _load_classifier(folder: Path, device: str) -> tuple[Any, Any]:
    """The folder's Pillow image processor and classification model (eval mode, on device)."""
    try:
        from transformers import AutoImageProcessor, AutoModelForImageClassification
    except ImportError as exc:
        raise BackendError(f"the hf backend needs transformers: pip install transformers ({exc})"
                           ) from exc
    auto_image_processor: Any = AutoImageProcessor  # untyped in transformers
    try:
        processor = auto_image_processor.from_pretrained(
            folder, backend="pil", local_files_only=True
        )
    except (OSError, ValueError, ImportError) as exc:
        raise BackendError(
            f"{folder} has no usable image processor (preprocessor_config.json): {exc}"
        ) from exc
    try:
        model: Any = AutoModelForImageClassification.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise BackendError(f"{folder} is not a loadable image-classification model: {exc}"
                           ) from exc
    return processor, model.eval().to(device)
