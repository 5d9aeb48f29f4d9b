"""The embedded baseline's caches: bounded, thread-safe, reuse only near-identical frames."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from needleforge.errors import BackendError
from needleforge.evaluate.memo import LRUCache, NearDuplicateMemo, fingerprint


def _picture(seed: int, *, shape: tuple[int, int] = (90, 160)) -> np.ndarray:
    """A smooth random RGB picture (blocks, so downscaling keeps it recognisable)."""
    blocks = np.random.default_rng(seed).integers(0, 256, (9, 16, 3), dtype=np.uint8)
    return np.kron(blocks, np.ones((shape[0] // 9, shape[1] // 16, 1), dtype=np.uint8))


def test_fingerprint_is_small_and_stable_under_noise() -> None:
    image = _picture(1)
    noisy = np.clip(image.astype(int) + np.random.default_rng(2).integers(-2, 3, image.shape),
                    0, 255).astype(np.uint8)
    a, b = fingerprint(image), fingerprint(noisy)
    assert a.shape == (32 * 18,) and a.dtype == np.uint8
    assert np.abs(a.astype(int) - b.astype(int)).mean() < 1.0
    with pytest.raises(BackendError, match="not HxWx3"):
        fingerprint(np.zeros((4, 4), dtype=np.uint8))


def test_memo_reuses_near_duplicates_only() -> None:
    memo: NearDuplicateMemo[str] = NearDuplicateMemo(max_diff=2.0)
    calls: list[int] = []

    def compute(image: np.ndarray) -> str:
        calls.append(1)
        return f"seen {int(image.mean())}"

    first = memo.get_or_compute(_picture(1), compute)
    brighter = np.clip(_picture(1).astype(int) + 1, 0, 255).astype(np.uint8)
    assert memo.get_or_compute(brighter, compute) == first  # 1 grey level off: same picture
    other = memo.get_or_compute(_picture(2), compute)
    assert other != first and len(calls) == 2
    assert (memo.hits, memo.misses, len(memo)) == (1, 2, 2)
    off: NearDuplicateMemo[str] = NearDuplicateMemo(max_diff=0.0)
    off.get_or_compute(_picture(1), compute)
    off.get_or_compute(_picture(1), compute)
    assert len(calls) == 4  # max_diff 0: never reused, even for the very same frame


def test_memo_is_bounded_and_forgets_the_oldest() -> None:
    memo: NearDuplicateMemo[int] = NearDuplicateMemo(capacity=2)
    for seed in range(3):
        memo.store(fingerprint(_picture(seed)), seed)
    assert len(memo) == 2
    assert memo.lookup(fingerprint(_picture(0))) is None
    assert memo.lookup(fingerprint(_picture(2))) == 2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"capacity": 0}, "capacity = 0"), ({"max_diff": -1.0}, "max_diff = -1.0"),
    ({"max_diff": 300.0}, "max_diff = 300.0")])
def test_memo_bad_settings(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(BackendError, match=message):
        NearDuplicateMemo(**kwargs)  # type: ignore[arg-type]


def test_lru_cache_evicts_least_recently_used_and_is_thread_safe() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.get_or_make("a", lambda: 1)
    cache.get_or_make("b", lambda: 2)
    assert cache.get_or_make("a", lambda: 99) == 1  # "a" is now the most recent
    cache.get_or_make("c", lambda: 3)  # evicts "b"
    assert cache.get_or_make("b", lambda: 20) == 20 and len(cache) == 2
    with pytest.raises(BackendError, match="capacity = 0"):
        LRUCache(0)
    made: list[int] = []
    shared: LRUCache[str, int] = LRUCache(4)

    def worker() -> None:
        for _ in range(200):
            shared.get_or_make("k", lambda: made.append(1) or 7)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1]  # made once under the lock, whatever the interleaving
