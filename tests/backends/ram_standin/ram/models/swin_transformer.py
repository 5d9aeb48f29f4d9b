"""Stand-in for ``ram.models.swin_transformer``: the table resize the loader calls."""

from __future__ import annotations

from typing import Any

RESIZED: list[tuple[str, int]] = []


def interpolate_relative_pos_embed(rel_pos_bias: Any, dst_num_pos: int,
                                   param_name: str = "") -> Any:
    """A table of ``dst_num_pos`` rows (meta, like its input); records the call."""
    import torch

    RESIZED.append((param_name, dst_num_pos))
    print(f"Position interpolate {param_name}")  # the real one prints too
    return torch.empty(dst_num_pos, rel_pos_bias.shape[1], device="meta")
