"""The ``ImageEmbedder`` backend family: images → unit vectors whose dot product is a similarity.

VNBench's needle filter (seed 000, Sec. 3.3) drops a candidate needle image when it looks too
much like the haystack it would be inserted into: the maximum cosine similarity between the
candidate and frames sampled from the haystack must not exceed a threshold (0.7 in the paper,
measured with CLIP). Any model that maps an image to a vector works, as long as rows come back
L2-normalized, so that ``a @ b.T`` is the cosine similarity matrix.

Implementations: :class:`~needleforge.backends.embedded.embedder.EmbeddedImageEmbedder`
(EfficientNet-Lite3 features, offline, CPU) and :class:`~needleforge.backends.hf.embedder.
HfClipEmbedder` (any local CLIP-like transformers folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import RGBImage
from needleforge.errors import BackendError

#: ``float32`` array of shape ``(n_images, dim)``, each row of unit length (or all zeros).
Embeddings: TypeAlias = npt.NDArray[np.float32]

_EPS = 1e-12


@runtime_checkable
class ImageEmbedder(Protocol):
    """Maps RGB images to L2-normalized embedding rows (cosine similarity = dot product)."""

    @property
    def name(self) -> str:
        """Stable model name recorded with every filter decision."""
        ...

    @property
    def version(self) -> str:
        """Package version plus a model-file hash prefix, so decisions are traceable."""
        ...

    def embed(self, images: Sequence[RGBImage]) -> Embeddings:
        """One unit-length ``float32`` row per image, in input order.

        An empty sequence gives an array of shape ``(0, dim)`` (``dim`` may be 0 when the
        backend cannot know it without running). Raises :class:`BackendError` for an image
        that is not a ``uint8`` HxWx3 array.
        """
        ...


def normalize_rows(vectors: npt.ArrayLike) -> Embeddings:
    """``vectors`` as ``float32`` rows scaled to unit length; all-zero rows stay zero.

    Why zero rows stay zero: a feature vector of all zeros (a black frame through ReLU
    features) has no direction, and a similarity of 0 with everything is the honest answer.

    Raises:
        BackendError: when ``vectors`` is not a finite 2-D array.
    """
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2:
        raise BackendError(f"embeddings must be a 2-D array, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise BackendError("embeddings contain NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    scaled = np.where(norms > _EPS, array / np.maximum(norms, _EPS), 0.0)
    return np.asarray(scaled, dtype=np.float32)


def max_similarity(candidates: Embeddings, *, references: Embeddings
                   ) -> npt.NDArray[np.float64]:
    """For each candidate row, its largest cosine similarity to any reference row.

    With no references every candidate gets ``-1`` (nothing to be similar to).

    Raises:
        BackendError: when the two arrays have different widths.
    """
    if len(candidates) == 0:
        return np.zeros(0, dtype=np.float64)
    if len(references) == 0:
        return np.full(len(candidates), -1.0)
    if candidates.shape[1] != references.shape[1]:
        raise BackendError(f"embedding widths differ: {candidates.shape[1]} vs "
                           f"{references.shape[1]} (were they made by the same model?)")
    sims = candidates.astype(np.float64) @ references.astype(np.float64).T
    return np.asarray(sims.max(axis=1), dtype=np.float64)
