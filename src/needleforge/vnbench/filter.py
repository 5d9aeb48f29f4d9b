"""The needle filter (seed 000, Sec. 3.3): keep needle images unlike the haystack.

For each haystack, ``n_frames`` frames are sampled at evenly spaced whole seconds, read from
the haystack's source at the render profile's size
(:func:`~needleforge.vnbench.clip_seconds.source_frames_at`: the frames its cached clip would start
those seconds with, without building that clip, which a sample spliced from the source's GOPs
never needs) and embedded; a candidate image whose largest cosine similarity to those frames
exceeds the threshold is dropped for that haystack — it could be mistaken for (or found in)
the haystack itself. Image embeddings are computed once per image per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from needleforge.backends.embedding import Embeddings, ImageEmbedder, max_similarity
from needleforge.params import RenderParams
from needleforge.vnbench.assets import ImageSet, NeedleImage, load_rgb
from needleforge.vnbench.clip_seconds import source_frames_at
from needleforge.vnbench.records import Haystack, VNBenchError, VNBenchSkip


def sample_seconds(length_s: int, *, n_frames: int) -> list[int]:
    """Up to ``n_frames`` distinct whole seconds spread evenly over ``[0, length_s)``."""
    if length_s < 1 or n_frames < 1:
        return []
    if n_frames >= length_s:
        return list(range(length_s))
    return sorted({int(v) for v in np.linspace(0, length_s - 1, n_frames).round()})


class NeedleFilter:
    """Screens needle images against haystacks with an :class:`ImageEmbedder`; haystack
    frames are taken at ``profile``'s size (the size the samples are rendered at).

    Raises:
        VNBenchError: for a threshold outside [-1, 1] or ``n_frames`` < 1.
    """

    def __init__(self, embedder: ImageEmbedder, *, profile: RenderParams,
                 threshold: float = 0.7, n_frames: int = 8) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise VNBenchError(f"similarity threshold = {threshold} must be in [-1, 1]")
        if n_frames < 1:
            raise VNBenchError(f"filter n_frames = {n_frames} must be >= 1")
        self.embedder = embedder
        self.profile = profile
        self.threshold = threshold
        self.n_frames = n_frames
        self._images: dict[Path, Embeddings] = {}

    def haystack_embeddings(self, haystack: Haystack) -> Embeddings:
        """Embeddings of ``haystack``'s sampled seconds, read from its source.

        Raises:
            MediaError: naming the source when it cannot be read.
        """
        seconds = sample_seconds(haystack.duration_s, n_frames=self.n_frames)
        return self.embedder.embed(source_frames_at(
            Path(haystack.source), start_s=haystack.start_s, seconds=seconds,
            profile=self.profile))

    def image_embeddings(self, images: Sequence[NeedleImage]) -> Embeddings:
        """Embeddings of ``images`` (each file embedded once per filter).

        Raises:
            VNBenchError: when an image cannot be read.
        """
        todo = sorted({i.path for i in images if i.path not in self._images})
        if todo:
            rows = self.embedder.embed([load_rgb(path) for path in todo])
            self._images.update({path: rows[k: k + 1] for k, path in enumerate(todo)})
        if not images:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate([self._images[i.path] for i in images], axis=0)

    def screen(self, images: ImageSet, *, haystack: Haystack) -> tuple[ImageSet, list[VNBenchSkip]]:
        """The images usable on ``haystack``, and a skip for each one dropped.

        Raises:
            MediaError: when the haystack's source cannot be read; VNBenchError for an
                unreadable image.
        """
        if not images.images:
            return images, []
        haystack_id = haystack.haystack_id
        sims = max_similarity(self.image_embeddings(images.images),
                              references=self.haystack_embeddings(haystack))
        kept, skips = [], []
        for image, sim in zip(images.images, sims, strict=True):
            if sim > self.threshold:
                skips.append(VNBenchSkip(f"image {image.asset_id} on haystack {haystack_id}",
                                         f"similarity {sim:.3f} to a haystack frame exceeds "
                                         f"{self.threshold} ({self.embedder.name})"))
            else:
                kept.append(image)
        return images.restricted(kept), skips
