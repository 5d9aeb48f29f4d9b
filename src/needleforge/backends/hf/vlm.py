"""Local image-text-to-text VLMs (SmolVLM, Idefics3, Qwen2-VL, …) as taggers (``hf_vlm``).

The model is asked with our own prompts (:mod:`.vlm_prompts`) through the folder's chat
template, so the same code serves every architecture that ``AutoModelForImageTextToText`` and
``AutoProcessor`` know. Decoding is greedy (``do_sample=False``): the same image and prompt give
the same answer, which keeps benchmark builds reproducible.

Besides :meth:`HfVlmTagger.tag`, :meth:`HfVlmTagger.describe_object` writes a referring
expression for a boxed object by drawing the box on a copy of the frame (visual prompting), and
:meth:`HfVlmTagger.ask` is the raw single-image question the later stages (question writing,
verification) build on.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.hf.model_dir import (
    DType,
    backend_name,
    model_version,
    require_model_dir,
    torch_dtype,
)
from needleforge.backends.hf.vlm_prompts import (
    DESCRIBE_PROMPT,
    TAG_PROMPT,
    clean_referring_expression,
    draw_box,
    parse_tag_answer,
)
from needleforge.backends.local_files import check_device
from needleforge.errors import BackendError
from needleforge.records import Box, TagScore

if TYPE_CHECKING:
    import torch


class HfVlmTagger:
    """Tags images (and describes boxed objects) with a local image-text-to-text model.

    Args:
        model_dir: a ``save_pretrained`` folder of an ``AutoModelForImageTextToText`` model
            with its processor (tokenizer, image processor and a chat template).
        max_new_tokens: longest answer generated, in tokens (>= 1).
        device: torch device (``cpu``, ``cuda``, ``cuda:1``, ``mps``).
        dtype: weights dtype; ``auto`` keeps the folder's (bf16 for most recent VLMs).

    Raises:
        BackendError: for bad options or device, a missing folder, config.json or weights
            (naming the folder and what is missing), a processor without a tokenizer or chat
            template, or a folder that is not an image-text-to-text model.
    """

    def __init__(
        self,
        model_dir: Path | str,
        *,
        max_new_tokens: int = 48,
        device: str = "cpu",
        dtype: DType = "auto",
    ) -> None:
        if max_new_tokens < 1:
            raise BackendError(f"max_new_tokens = {max_new_tokens!r} must be >= 1")
        weights_dtype = torch_dtype(dtype)
        folder = require_model_dir(model_dir)
        self.device = check_device(device)
        self.max_new_tokens = max_new_tokens
        self._processor = _load_processor(folder)
        self._model = _load_model(folder, device=self.device, dtype=weights_dtype)
        self.name: str = backend_name(folder)
        self.version: str = model_version(folder)

    def ask(self, image: RGBImage, *, prompt: str, max_new_tokens: int | None = None) -> str:
        """The model's answer (special tokens removed, stripped) to ``prompt`` about ``image``.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array, ``prompt`` is blank, or
                the processor cannot build inputs for this image.
        """
        rgb = ensure_rgb(image)
        if not prompt.strip():
            raise BackendError("prompt must not be empty")
        if max_new_tokens is not None and max_new_tokens < 1:
            raise BackendError(f"max_new_tokens = {max_new_tokens!r} must be >= 1")
        import torch

        inputs = self._inputs(Image.fromarray(rgb), prompt)
        prompt_length = int(inputs["input_ids"].shape[1])
        with torch.inference_mode():
            output = self._model.generate(
                **inputs,
                max_new_tokens=max_new_tokens or self.max_new_tokens,
                do_sample=False,
            )
        # Decoder-only models echo the prompt before the answer; encoder-decoders do not.
        if not getattr(self._model.config, "is_encoder_decoder", False):
            output = output[:, prompt_length:]
        answer = self._processor.batch_decode(output, skip_special_tokens=True)[0]
        return str(answer).strip()

    def tag(self, image: RGBImage) -> list[TagScore]:
        """Objects the model names for ``image`` (:data:`.vlm_prompts.TAG_PROMPT`), in answer
        order, each scored 1.0 (:data:`.vlm_prompts.VLM_TAG_SCORE`).

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        return parse_tag_answer(self.ask(image, prompt=TAG_PROMPT))

    def describe_object(self, image: RGBImage, box: Box) -> str:
        """A short noun phrase singling out the object in ``box`` (normalized coordinates).

        The box is drawn on a copy of ``image`` and the model is asked
        (:data:`.vlm_prompts.DESCRIBE_PROMPT`) for a phrase that does not mention it; the
        answer is cleaned by :func:`.vlm_prompts.clean_referring_expression`. ``""`` when the
        model gave nothing usable.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        answer = self.ask(draw_box(image, box=box), prompt=DESCRIBE_PROMPT)
        return clean_referring_expression(answer)

    def _inputs(self, image: Image.Image, prompt: str) -> Any:
        """Chat-templated prompt + image as model inputs on the model's device and dtype."""
        messages = [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
        ]
        text = self._processor.apply_chat_template(messages, add_generation_prompt=True)
        try:
            inputs = self._processor(text=[text], images=[image], return_tensors="pt")
        except (ValueError, TypeError) as exc:
            raise BackendError(f"{self.name}: the processor cannot build inputs: {exc}") from exc
        return inputs.to(device=self._model.device, dtype=self._model.dtype)


def _load_processor(folder: Path) -> Any:
    """The folder's processor (Pillow image processor), checked to be a chat processor."""
    try:
        from transformers import AutoProcessor
    except ImportError as exc:
        raise BackendError(f"hf_vlm needs transformers: pip install transformers ({exc})"
                           ) from exc
    try:
        # transformers leaves these loaders untyped; Any keeps mypy strict elsewhere.
        auto_processor: Any = AutoProcessor
        processor = auto_processor.from_pretrained(folder, backend="pil", local_files_only=True)
    except (OSError, ValueError, ImportError) as exc:
        raise BackendError(f"{folder} has no usable processor: {exc}") from exc
    if getattr(processor, "tokenizer", None) is None or not hasattr(processor, "image_processor"):
        raise BackendError(
            f"{folder} is not an image-text-to-text model folder: its processor "
            f"({type(processor).__name__}) lacks a tokenizer or an image processor"
        )
    if not getattr(processor, "chat_template", None):
        raise BackendError(f"{folder}: the processor has no chat template (chat_template.jinja)")
    return processor


def _load_model(folder: Path, *, device: str, dtype: str | torch.dtype) -> Any:
    """The image-text-to-text model in eval mode on ``device``."""
    from transformers import AutoModelForImageTextToText

    try:
        model: Any = AutoModelForImageTextToText.from_pretrained(
            folder, dtype=dtype, local_files_only=True
        )
    except (OSError, ValueError) as exc:
        raise BackendError(f"{folder} is not a loadable image-text-to-text model: {exc}") from exc
    return model.eval().to(device)
