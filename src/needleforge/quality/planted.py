"""Planted biases: release records rewritten so that a blind guess wins, to prove the audit.

The bias audit (:mod:`needleforge.quality.bias`) and its gate are only worth trusting if they
catch a prior that is really there. These rewrite a release's question records (the dicts of
``questions.jsonl``) with the two priors issue 21 names — every grounding answer in the first
tenth of its video, every counting answer "1" — for the tests and ``benchmarks/evaluate.py``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

Row = dict[str, Any]


def plant_early(records: Sequence[Row], *, seed: int = 0) -> list[Row]:
    """Every grounding answer moved into the first tenth of its video (one span, its length
    kept); other records as they are."""
    rng = random.Random(seed)
    out = []
    for r in records:
        if "answer_spans" in r:
            (start, end), duration = r["answer_spans"][0], r["duration_s"]
            new = round(rng.uniform(0.0, 0.1 * duration), 3)
            r = {**r, "answer_spans": [[new, round(min(duration, new + end - start), 3)]]}
        out.append(r)
    return out


def plant_ones(records: Sequence[Row]) -> list[Row]:
    """Every counting answer made "1": the right option's text becomes "1" (a wrong "1" takes
    the old right text, so the options stay distinct); other records as they are."""
    out = []
    for r in records:
        if "options" in r and str(r["task"]).startswith("cnt"):
            options = list(r["options"])
            right = options[r["answer_index"]]
            options = [right if o == "1" else o for o in options]
            options[r["answer_index"]] = "1"
            r = {**r, "options": options}
        out.append(r)
    return out
