"""Answers about a frame, kept by the frame's content.

Why: the negative checks ask the same question of the same frame many times. A scene is a
negative of many montages, and the planner and the looking verifier each ask it again: on
the demo store, stage 2 measured a colour cast 3,179 times on 648 keyframes, at 27 ms a
640x360 frame. The answer depends only on the pixels and the question, so it is kept under
a digest of the pixels (BLAKE2b of the bytes, with shape and dtype: about 1 ms a 640x360
frame) and never computed twice; the answers are what the function returns, bit for bit.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

P = ParamSpec("P")
T = TypeVar("T")

#: Answers kept per function (least recently used dropped first): a few thousand frames.
MAX_KEPT = 8192


def pixel_digest(image: npt.NDArray[np.generic]) -> tuple[Hashable, ...]:
    """A key that two images share only when their pixels, shape and dtype are equal."""
    data = np.ascontiguousarray(image)
    return (data.shape, data.dtype.str, hashlib.blake2b(data.data, digest_size=16).digest())


def kept_per_frame(
    function: Callable[Concatenate[npt.NDArray[np.uint8], P], T],
) -> Callable[Concatenate[npt.NDArray[np.uint8], P], T]:
    """``function(image, *args)``, its answers kept per (pixels, args) (module docstring).
    Thread-safe; an exception is raised again each time, never kept."""
    kept: OrderedDict[tuple[Hashable, ...], T] = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(function)
    def wrapper(image: npt.NDArray[np.uint8], /, *args: P.args, **kwargs: P.kwargs) -> T:
        key = (pixel_digest(image), args, tuple(sorted(kwargs.items())))
        with lock:
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
        answer = function(image, *args, **kwargs)
        with lock:
            kept[key] = answer
            if len(kept) > MAX_KEPT:
                kept.popitem(last=False)
        return answer

    return wrapper
