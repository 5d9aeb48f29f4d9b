"""channel_max / channel_min: numpy's max/min over the last axis, channel by channel."""

from __future__ import annotations

import numpy as np
import pytest

from needleforge.backends.base import channel_max, channel_min


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float64])
def test_they_equal_numpy_reductions_over_the_channel_axis(dtype: type) -> None:
    rng = np.random.default_rng(3)
    pixels = (rng.random((7, 11, 3)) * 255).astype(dtype)
    pixels[0, 0] = 5  # ties between channels
    for block in [pixels, pixels.reshape(77, 3), pixels[0, 0]]:  # a frame, rows, a pixel
        assert np.array_equal(channel_max(block), block.max(axis=-1))
        assert np.array_equal(channel_min(block), block.min(axis=-1))
        assert channel_max(block).dtype == block.dtype

