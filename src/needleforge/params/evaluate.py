"""``evaluate:`` of ``params.yaml``: what the models under evaluation see.

Read by ``needleforge evaluate`` (``--max-frames`` overrides it) and by the evaluate flow
(``flows/evaluate.py``), so both answer a release with the same frames.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class EvaluateParams(_Section):
    """Frame sampling of ``needleforge evaluate`` and the evaluate flow.

    Every model that watches the videos sees each release video sampled at 1 fps and thinned
    uniformly to at most ``max_frames`` frames (:mod:`needleforge.evaluate.frame_sampling`);
    the value is written into each predictions file's ``.meta.json``, and a resumed run with another
    value is refused. The default, 64, is what a video-language model under test should see;
    a run of the CPU baselines may lower it for cost (the embedded baseline runs its detector
    once per frame), as the sample ``params.yaml`` does. The blind baselines read no video.
    """

    max_frames: Annotated[int, Field(ge=1, le=10_000)] = 64
