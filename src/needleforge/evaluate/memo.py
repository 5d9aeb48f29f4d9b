"""Bounded caches for the embedded baseline: per-video results and near-duplicate frames.

Why: the embedded baseline's cost is its models (the SSD detector takes ~0.1 s a frame on two
cores, OCR more), and montage benchmarks show the same footage again and again: NeMo builds
every montage from one pool of source scenes, VNBench reuses haystacks across tasks, and the
four tries of a multiple-choice sample share one video. Two caches cut the model calls:

- :class:`LRUCache` keeps per-video results (what was seen on each sampled frame) for the last
  ``capacity`` videos, so questions sharing a video run the models once.
- :class:`NearDuplicateMemo` remembers a model's answer per frame *fingerprint* (a 32x18
  grayscale thumbnail) and hands it out again for a later frame whose fingerprint differs by
  less than ``max_diff`` grey levels on average: a near-identical picture gets the same
  detections. The memo holds at most ``capacity`` fingerprints (oldest dropped first), so memory
  stays bounded (``capacity`` x 576 bytes plus the answers).

Both are thread-safe (one lock each). The LRU cache makes a missing value under its lock (its
values are cheap containers); the memo computes a miss outside its lock, so two threads may
compute the same miss once each, which wastes time but never gives a wrong answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import RGBImage
from needleforge.errors import BackendError

K = TypeVar("K")
V = TypeVar("V")

#: Fingerprint size (width, height): 16:9 like the release videos, 576 bytes a frame.
FINGERPRINT_SIZE = (32, 18)


def fingerprint(image: RGBImage) -> npt.NDArray[np.uint8]:
    """A 32x18 grayscale thumbnail of an RGB frame, flattened: what near-duplicates share.

    Area averaging (not point sampling) keeps it stable under encoder noise.

    Raises:
        BackendError: ``image`` is not an HxWx3 array.
    """
    if image.ndim != 3 or image.shape[2] != 3 or min(image.shape[:2]) < 1:
        raise BackendError(f"image shape {image.shape} is not HxWx3")
    import cv2  # heavy: only the baseline that needs it imports it

    gray = cv2.cvtColor(np.ascontiguousarray(image, dtype=np.uint8), cv2.COLOR_RGB2GRAY)
    thumb = cv2.resize(gray, FINGERPRINT_SIZE, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(thumb, dtype=np.uint8).reshape(-1)


class LRUCache(Generic[K, V]):
    """At most ``capacity`` entries; the least recently used goes first.

    Raises:
        BackendError: ``capacity`` < 1.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise BackendError(f"{capacity = } must be >= 1")
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The cached value of ``key``, or ``make()`` stored under it."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            value = make()
            self._items[key] = value
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class NearDuplicateMemo(Generic[V]):
    """A model's answers keyed by frame fingerprint, reused for near-identical frames.

    Args:
        capacity: most fingerprints kept; the oldest is overwritten first.
        max_diff: a frame reuses an answer when the mean absolute difference between the two
            fingerprints (grey levels, 0–255) is *below* this; 0 turns reuse off.

    Raises:
        BackendError: ``capacity`` < 1 or ``max_diff`` not in [0, 255].
    """

    def __init__(self, *, capacity: int = 8192, max_diff: float = 2.0) -> None:
        if capacity < 1:
            raise BackendError(f"{capacity = } must be >= 1")
        if not 0.0 <= max_diff <= 255.0:
            raise BackendError(f"{max_diff = } must be in [0, 255]")
        self.capacity, self.max_diff = capacity, max_diff
        width, height = FINGERPRINT_SIZE
        self._prints = np.zeros((capacity, width * height), dtype=np.uint8)
        self._values: list[V | None] = [None] * capacity
        self._size = 0
        self._next = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def lookup(self, print_: npt.NDArray[np.uint8]) -> V | None:
        """The answer stored for the nearest fingerprint within ``max_diff``, or None."""
        with self._lock:
            if self._size == 0 or self.max_diff <= 0:
                self.misses += 1
                return None
            stored = self._prints[:self._size]
            diffs = np.abs(stored.astype(np.int16) - print_.astype(np.int16)).mean(axis=1)
            best = int(np.argmin(diffs))
            if diffs[best] < self.max_diff:
                self.hits += 1
                return self._values[best]
            self.misses += 1
            return None

    def store(self, print_: npt.NDArray[np.uint8], value: V) -> None:
        """Remember ``value`` for ``print_`` (overwriting the oldest entry when full)."""
        with self._lock:
            self._prints[self._next] = print_
            self._values[self._next] = value
            self._next = (self._next + 1) % self.capacity
            self._size = min(self._size + 1, self.capacity)

    def get_or_compute(self, image: RGBImage, compute: Callable[[RGBImage], V]) -> V:
        """``compute(image)``, or the answer of a near-identical frame seen before."""
        print_ = fingerprint(image)
        found = self.lookup(print_)
        if found is not None:
            return found
        value = compute(image)
        self.store(print_, value)
        return value

    def __len__(self) -> int:
        with self._lock:
            return self._size
