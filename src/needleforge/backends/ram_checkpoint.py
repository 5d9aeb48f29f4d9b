"""A RAM++ Swin-L checkpoint: what its file must be, the tensors it must hold, and how they
are fitted to the built model, each failure a :class:`RamLoadError` naming the file or tensor.

Why a module of its own: these checks run before ``ram`` is imported (an import and build
take 15–60 s), in this process (:mod:`needleforge.backends.ram_plus` names a bad file before
starting a worker) and in RAM++'s own environment (:mod:`needleforge.backends.ram_worker`,
run there as a script beside this file). So, like the worker, it imports nothing of
needleforge, and torch only inside :func:`read_checkpoint`.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: Tensors every RAM++ Swin-L checkpoint holds, with their shapes, read from the ``ram``
#: source (``RAM_plus.__init__``, ``configs/swin/config_swinL_*.json``, ``q2l_config.json``):
#: 4,585 tags × 51 descriptions of 512-d label embeddings, the Swin-L encoder (embed 192,
#: width 1536), the 2-layer, 768-wide tagging head. Independent of ``image_size``: the
#: relative-position tables, which are not, are resized at load as ``ram`` does.
SIGNATURE: Mapping[str, tuple[int, ...]] = {
    "label_embed": (4585 * 51, 512),
    "reweight_scale": (),
    "image_proj.weight": (512, 1536),
    "wordvec_proj.weight": (768, 512),
    "fc.weight": (1, 768),
    "visual_encoder.patch_embed.proj.weight": (192, 3, 4, 4),
    "visual_encoder.norm.weight": (1536,),
    "tagging_head.encoder.layer.0.crossattention.self.key.weight": (768, 512),
    "tagging_head.encoder.layer.1.output.dense.weight": (768, 3072),
}
#: Buffers the model computes itself; ``ram``'s loader drops them from checkpoints.
_RECOMPUTED = ("relative_position_index", "attn_mask")


class RamLoadError(Exception):
    """RAM++ cannot be loaded; the message names the file, library or tensor at fault."""


#: First bytes of what ``torch.save`` writes: a zip archive (since torch 1.6), or a pickle.
_CHECKPOINT_MAGIC = (b"PK\x03\x04", b"\x80")
_SNIFF_BYTES = 4096


def checkpoint_problem(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a PyTorch checkpoint, judged by its first bytes
    (``"is empty (0 bytes)"``, ``"is an HTML page …"``, ``"is a text file …"``), or None
    when it may be one. Checked before ``torch.load``, whose own errors on such files
    (``EOFError``, ``pop from empty list``, advice to retry with ``weights_only=False``) tell a
    user nothing about the file they pointed us at."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if size == 0:
        return "is empty (0 bytes), not a PyTorch checkpoint"
    if head.startswith(_CHECKPOINT_MAGIC):
        return None
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if start.startswith((b"<!doctype html", b"<html")) or b"<html" in start[:1024]:
        return ("is an HTML page, not a PyTorch checkpoint (a download that saved an error "
                "or sign-in page?)")
    if _is_text(head):
        return f"is a text file ({size} bytes), not a PyTorch checkpoint"
    return "is not a PyTorch checkpoint (neither the zip archive nor the pickle torch writes)"


def _is_text(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) reads as UTF-8 text without NUL bytes."""
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut at the end of the sample is fine
        return exc.start >= len(head) - 3
    return True


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The state dict in a RAM++ checkpoint (``{"model": state_dict}``), read on the CPU
    without running any pickled code, and checked against :data:`SIGNATURE`.

    Raises:
        RamLoadError: a file that is not a PyTorch checkpoint (named by what it is, see
            :func:`checkpoint_problem`; torch's own error kept as the cause, not in the
            message), a checkpoint that is not a dict with a ``model`` state dict (a bare
            state dict is named as such), an empty one, or one missing or misshaping a RAM++
            Swin-L tensor.
    """
    problem = checkpoint_problem(path)
    if problem is not None:
        raise RamLoadError(f"checkpoint {path} {problem}")
    import torch

    try:
        try:
            checkpoint = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, ValueError, KeyError, IndexError, TypeError,
            pickle.UnpicklingError) as exc:  # what torch.load raises on bytes it cannot read
        raise RamLoadError(f"checkpoint {path} is not a PyTorch checkpoint RAM++ can read: "
                           "torch cannot load it (a damaged or partial download?)") from exc
    state = checkpoint_state(checkpoint, where=f"checkpoint {path}")
    check_signature(state, where=f"checkpoint {path}")
    return state


def checkpoint_state(checkpoint: object, *, where: str) -> dict[str, Any]:
    """``checkpoint["model"]``, refusing every other layout by name.

    Raises:
        RamLoadError: not a dict, a bare state dict, no ``model`` key, or an empty state dict.
    """
    if not isinstance(checkpoint, dict):
        raise RamLoadError(f"{where} holds a {type(checkpoint).__name__}, not RAM++'s "
                           "{'model': state_dict}")
    if "model" not in checkpoint:
        if checkpoint and all(_is_tensor(v) for v in checkpoint.values()):
            first = next(iter(checkpoint))
            raise RamLoadError(
                f"{where} is a bare state dict ({len(checkpoint)} tensors, e.g. {first!r}); "
                "RAM++ checkpoints hold it under 'model': save {'model': state_dict}")
        keys = ", ".join(repr(k) for k in list(checkpoint)[:5]) or "none"
        raise RamLoadError(f"{where} has no 'model' state dict (its keys: {keys})")
    state = checkpoint["model"]
    if not isinstance(state, dict):
        raise RamLoadError(f"{where}: 'model' is a {type(state).__name__}, not a state dict")
    if not state:
        raise RamLoadError(f"{where}: its 'model' state dict is empty (no weights at all)")
    return state


def check_signature(state: Mapping[str, Any], *, where: str) -> None:
    """Check the tensors every RAM++ Swin-L checkpoint holds (:data:`SIGNATURE`).

    ``ram`` checkpoints may name the tagging head ``vision_multi``; both names are accepted.

    Raises:
        RamLoadError: listing every missing tensor, or every tensor of the wrong shape.
    """
    missing, misshapen = [], []
    for key, shape in SIGNATURE.items():
        tensor = state.get(key, state.get(key.replace("tagging_head.", "vision_multi.", 1)))
        if tensor is None:
            missing.append(key)
        elif not _is_tensor(tensor):
            misshapen.append(f"{key} is a {type(tensor).__name__}, not a tensor")
        elif tuple(tensor.shape) != shape:
            misshapen.append(f"{key} has shape {tuple(tensor.shape)}, not {shape}")
    if missing:
        raise RamLoadError(
            f"{where} is not a RAM++ Swin-L checkpoint: it lacks {len(missing)} of its "
            f"tensors ({', '.join(missing)}); it holds {len(state)} tensors "
            "(RAM and Tag2Text checkpoints do not fit RAM++)")
    if misshapen:
        raise RamLoadError(f"{where} does not fit RAM++ Swin-L: " + "; ".join(misshapen))


def fit_state_dict(state: Mapping[str, Any], expected: Mapping[str, Any], *,
                   resize_table: Callable[[Any, int, str], Any], window_size: int,
                   where: str) -> dict[str, Any]:
    """``state`` renamed and resized as ``ram``'s loader does (``vision_multi`` → tagging
    head, relative-position tables resized to ``window_size``, recomputed buffers dropped),
    then matched tensor by tensor against the built model's ``expected`` state dict.

    Tensors the model lacks are ignored (checkpoints may carry training-only parts).

    Raises:
        RamLoadError: listing the model tensors the checkpoint lacks (beyond recomputed
            buffers) and the ones whose shapes differ.
    """
    fitted: dict[str, Any] = {}
    for key, tensor in state.items():
        name = key.replace("vision_multi", "tagging_head", 1)
        if any(part in name for part in _RECOMPUTED):
            continue
        if "relative_position_bias_table" in name:
            tensor = resize_table(tensor, (2 * window_size - 1) ** 2, name)
        fitted[name] = tensor
    missing = [k for k in expected if k not in fitted and not any(p in k for p in _RECOMPUTED)]
    misshapen = [f"{k}: {tuple(fitted[k].shape)} instead of {tuple(v.shape)}"
                 for k, v in expected.items()
                 if k in fitted and tuple(fitted[k].shape) != tuple(v.shape)]
    problems = []
    if missing:
        problems.append(f"it lacks {len(missing)} of the model's {len(expected)} tensors "
                        f"({_some(missing)})")
    if misshapen:
        problems.append(f"{len(misshapen)} tensors have other shapes ({_some(misshapen)})")
    if problems:
        raise RamLoadError(f"{where} does not fit the RAM++ model: " + "; ".join(problems))
    return fitted


def _some(items: list[str], count: int = 5) -> str:
    more = f", … {len(items) - count} more" if len(items) > count else ""
    return ", ".join(items[:count]) + more


def _is_tensor(value: object) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")
