"""needleforge: a benchmark factory for video-language models.

Turns a library of authorized videos into versioned, quality-checked "needle" benchmarks
(NeMo needle-in-a-montage and VideoNIAH/VNBench) and scores models on them.
"""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``needleforge.load_release`` without importing the release machinery at package import."""
    if name == "load_release":
        from needleforge.release import load_release

        return load_release
    raise AttributeError(f"module 'needleforge' has no attribute {name!r}")
