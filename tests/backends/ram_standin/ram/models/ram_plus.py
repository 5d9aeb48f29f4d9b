"""Stand-in for ``ram.models.ram_plus`` (see ../../README.md).

``RAM_STANDIN_FAIL`` picks a failure: ``import-runtime`` (a torchvision built for another
torch), ``import-transformers`` (RAM++'s BERT code under transformers 5: a real ImportError
there), ``import-missing`` (a dependency not installed), ``build-attribute`` (the model build
under transformers 5).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

print("stand-in ram: loading tag list")  # ram prints while importing
print("stand-in ram: stderr noise", file=sys.stderr)
warnings.filterwarnings("ignore")  # as ram does, for the whole process

_FAIL = os.environ.get("RAM_STANDIN_FAIL", "")
if _FAIL == "import-runtime":
    raise RuntimeError("operator torchvision::nms does not exist")
if _FAIL == "import-transformers":
    from transformers.modeling_utils import apply_chunking_to_forward  # noqa: F401
if _FAIL == "import-missing":
    import fairscale_is_not_installed_here  # type: ignore[import-not-found]  # noqa: F401

import torch  # noqa: E402
from torch import nn  # noqa: E402

#: RAM++ Swin-L's tensor names and shapes: the ones needleforge checks, one block's
#: relative-position table and index (resized and recomputed at load), one more weight.
SHAPES: dict[str, tuple[int, ...]] = {
    "label_embed": (4585 * 51, 512),
    "reweight_scale": (),
    "image_proj.weight": (512, 1536),
    "wordvec_proj.weight": (768, 512),
    "fc.weight": (1, 768),
    "visual_encoder.patch_embed.proj.weight": (192, 3, 4, 4),
    "visual_encoder.norm.weight": (1536,),
    "tagging_head.encoder.layer.0.crossattention.self.key.weight": (768, 512),
    "tagging_head.encoder.layer.1.output.dense.weight": (768, 3072),
    "visual_encoder.layers.0.blocks.0.attn.relative_position_bias_table": (529, 6),
    "visual_encoder.layers.0.blocks.0.attn.relative_position_index": (144, 144),
    "visual_encoder.layers.0.blocks.0.attn.qkv.weight": (576, 192),
}
COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0),
           "white": (1.0, 1.0, 1.0), "black": (0.0, 0.0, 0.0)}


def init_tokenizer(*_args: Any) -> Any:
    raise OSError("stand-in: init_tokenizer would download bert-base-uncased")


class RAM_plus(nn.Module):  # the real class name
    def __init__(self, image_size: int = 384, vit: str = "base", **_kwargs: Any) -> None:
        super().__init__()
        print(f"stand-in ram: building {vit} at {image_size}")
        self.tokenizer = init_tokenizer("bert-base-uncased")
        if len(self.tokenizer) != 30524:
            raise ValueError(f"tokenizer of {len(self.tokenizer)} tokens")
        if _FAIL == "build-attribute":
            raise AttributeError("'BertModel' object has no attribute 'all_tied_weights_keys'")
        self.window = 12 if image_size == 384 else 7
        self.loaded: dict[str, Any] = {}

    def state_dict(self, *_args: Any, **_kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        shapes = dict(SHAPES)
        table = "visual_encoder.layers.0.blocks.0.attn.relative_position_bias_table"
        shapes[table] = ((2 * self.window - 1) ** 2, 6)
        return {k: torch.empty(s, device="meta") for k, s in shapes.items()}

    def load_state_dict(self, state: Any, strict: bool = True, **_kwargs: Any) -> Any:  # type: ignore[override]
        self.loaded = dict(state)
        return None

    def generate_tag(self, image: torch.Tensor) -> tuple[list[str], list[str]]:
        if image.dim() != 4 or image.shape[:2] != (1, 3):
            raise RuntimeError(f"bad batch {tuple(image.shape)}")
        mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
        rgb = (image[0] * std + mean).mean(dim=(1, 2)).tolist()
        name = min(COLOURS, key=lambda c: sum(
            (a - b) ** 2 for a, b in zip(COLOURS[c], rgb, strict=True)))
        return [f"{name} | stand-in | size {image.shape[-1]}"], ["中文"]


def ram_plus(pretrained: str = "", **kwargs: Any) -> RAM_plus:
    if pretrained:
        raise AssertionError("needleforge loads the checkpoint itself, strictly")
    return RAM_plus(**kwargs)
