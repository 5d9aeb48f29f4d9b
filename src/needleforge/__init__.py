"""needleforge: a benchmark factory for video-language models.

Turns a library of authorized videos into versioned, quality-checked "needle" benchmarks
(NeMo needle-in-a-montage and VideoNIAH/VNBench) and scores models on them.
"""

__version__ = "0.1.0"
