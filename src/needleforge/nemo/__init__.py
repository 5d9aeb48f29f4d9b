"""NeMo Stage 2 (seed 001, Sec. 3.2.2): targets, written needles, negatives, short montage
plans and self-verification.

Typical use (the CLI/flow does this and then writes the result to the store)::

    describer, verifier = build_backends(params.nemo, registry=default_registry())
    probe = build_probe(params.nemo, videos=videos, registry=default_registry())
    with VideoKeyframes({v.video_id: v for v in videos}) as keyframes:
        result = generate(videos=videos, scenes=store.scenes(), tags=store.scene_tags(),
                          objects=store.objects(), params=params.nemo,
                          describer=describer, verifier=verifier, keyframes=keyframes,
                          probe=probe)
    store.record_generation(result.montages, result.questions, result.verifications)

The describer/verifier protocols and their value types (``TargetView``, ``Verdict`` …) are
backend types: import them from :mod:`needleforge.backends.writing`. ``keyframes`` may be left
out when both backends read only the tables (``embedded``); ``probe`` (None when
``check.negatives`` is off) re-checks object targets' negatives for the label with tiled
detection and should be closed after use. Importing this package registers
nothing and loads no model.
"""

from __future__ import annotations

from needleforge.nemo.acceptor import RejectedNegative
from needleforge.nemo.backend_choice import build_backends
from needleforge.nemo.checks.build import build_probe, scan_scenes
from needleforge.nemo.checks.negative_probe import NegativeProbe, ProbeCost
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.expand import CellCount, ExpansionResult, Shortfall, expand
from needleforge.nemo.generate import (
    GenerationResult,
    KeyframeSource,
    SkipRecord,
    generate,
)
from needleforge.nemo.negatives import excluded_terms, select_negatives
from needleforge.nemo.plan import PlanSkip, montage_id_for, plan_short_montage, question_id_for
from needleforge.nemo.stats import Table2, benchmark_table
from needleforge.nemo.tables import SceneTables, index_tables
from needleforge.nemo.targets import Target, is_prominent, object_span, select_targets
from needleforge.nemo.video_keyframes import VideoKeyframes, scene_times
from needleforge.records import SceneScan, Sighting

__all__ = [
    "CellCount",
    "ExpansionResult",
    "GenerationResult",
    "KeyframeSource",
    "NegativeProbe",
    "PlanSkip",
    "ProbeCost",
    "RejectedNegative",
    "SceneScan",
    "SceneTables",
    "Shortfall",
    "Sighting",
    "SkipRecord",
    "Table2",
    "Target",
    "TiledProbe",
    "VideoKeyframes",
    "benchmark_table",
    "build_backends",
    "build_probe",
    "excluded_terms",
    "expand",
    "generate",
    "index_tables",
    "is_prominent",
    "montage_id_for",
    "object_span",
    "plan_short_montage",
    "question_id_for",
    "scan_scenes",
    "scene_times",
    "select_negatives",
    "select_targets",
]
