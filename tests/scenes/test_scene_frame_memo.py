"""Answers kept per frame: computed once per (pixels, arguments), the same answers as without."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.scenes import colour_cast, palette
from needleforge.scenes.frame_memo import MAX_KEPT, kept_per_frame, pixel_digest


def _counted() -> tuple[list[tuple[int, str]], object]:
    calls: list[tuple[int, str]] = []

    @kept_per_frame
    def red_share(image: npt.NDArray[np.uint8], colour: str) -> float:
        if image.ndim != 3:
            calls.append((-1, colour))
            raise ValueError(f"not an image: {image.shape}")
        calls.append((int(image[0, 0, 0]), colour))
        return float((image[..., 0] > 128).mean())

    return calls, red_share


def test_an_answer_is_computed_once_per_pixels_and_arguments() -> None:
    calls, red_share = _counted()
    frame = np.zeros((36, 64, 3), np.uint8)
    frame[:, :32, 0] = 200
    assert red_share(frame, "red") == 0.5  # type: ignore[operator]
    assert red_share(frame.copy(), "red") == 0.5  # type: ignore[operator]  # same pixels
    assert red_share(frame, "blue") == 0.5  # type: ignore[operator]  # another question
    other = frame.copy()
    other[0, 40, 0] = 255  # one pixel differs: another frame
    assert red_share(other, "red") == pytest.approx(0.5 + 1 / (36 * 64))  # type: ignore[operator]
    assert calls == [(200, "red"), (200, "blue"), (200, "red")]


def test_shape_and_dtype_are_part_of_the_key() -> None:
    flat = np.zeros(64 * 36 * 3, np.uint8)
    assert pixel_digest(flat) != pixel_digest(flat.reshape(36, 64, 3))
    assert pixel_digest(flat) != pixel_digest(flat.view(np.int8))
    # A strided view is keyed by its pixels, not by the memory it views.
    wide = np.arange(36 * 128 * 3, dtype=np.uint8).reshape(36, 128, 3)
    assert pixel_digest(wide[:, ::2]) == pixel_digest(np.ascontiguousarray(wide[:, ::2]))


def test_a_failure_is_raised_each_time_and_never_kept() -> None:
    calls, red_share = _counted()
    bad = np.zeros((4, 4), np.uint8)
    for _ in range(2):
        with pytest.raises(ValueError, match="not an image"):
            red_share(bad, "red")  # type: ignore[operator]
    assert len(calls) == 2
    with pytest.raises(ValueError, match="must be uint8"):
        colour_cast.negative_look(np.zeros((4, 4), np.float32), "red")  # type: ignore[arg-type]


def test_the_oldest_answers_are_dropped_past_the_bound() -> None:
    calls, red_share = _counted()
    frames = [np.array([[[i % 256, i // 256, 0]]], np.uint8) for i in range(MAX_KEPT + 1)]
    for frame in frames:
        red_share(frame, "red")  # type: ignore[operator]
    red_share(frames[0], "red")  # type: ignore[operator]  # dropped: computed again
    red_share(frames[-1], "red")  # type: ignore[operator]  # still kept
    assert len(calls) == MAX_KEPT + 2


def test_kept_checks_answer_as_computed_and_across_threads() -> None:
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, (90, 160, 3), dtype=np.uint8) for _ in range(4)]
    frames.append(np.full((90, 160, 3), (200, 40, 30), np.uint8))
    plain = colour_cast.negative_look.__wrapped__  # type: ignore[attr-defined]
    expected = [(plain(f, "red"), palette.clearly_in_colour.__wrapped__(f))  # type: ignore[attr-defined]
                for f in frames]
    assert expected[-1][0] is not None  # a red frame is refused as a negative of "mostly red"
    answers: list[list[tuple[str | None, bool]]] = []

    def ask() -> None:
        answers.append([(colour_cast.negative_look(f, "red"), palette.clearly_in_colour(f))
                        for f in frames])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [expected] * 4
