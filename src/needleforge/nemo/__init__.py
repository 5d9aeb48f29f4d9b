"""NeMo Stage 2 (seed 001, Sec. 3.2.2): targets, written needles, negatives, short montage
plans and self-verification.

Typical use (the CLI/flow does this and then writes the result to the store)::

    describer, verifier = build_backends(params.nemo, registry=default_nemo_registry())
    result = generate(videos=store.videos(), scenes=store.scenes(), tags=store.scene_tags(),
                      objects=store.objects(), params=params.nemo,
                      describer=describer, verifier=verifier)
    store.record_generation(result.montages, result.questions, result.verifications)

Importing this package registers nothing and loads no model.
"""

from __future__ import annotations

from needleforge.nemo.backends import (
    NEMO_FAMILIES,
    NemoFamily,
    NemoRegistry,
    build_backends,
    default_nemo_registry,
)
from needleforge.nemo.embedded import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo.errors import NemoError
from needleforge.nemo.generate import GenerationResult, KeyframeSource, SkipRecord, generate
from needleforge.nemo.negatives import excluded_terms, select_negatives
from needleforge.nemo.plan import PlanSkip, montage_id_for, plan_short_montage, question_id_for
from needleforge.nemo.protocols import (
    Describer,
    SceneView,
    Skip,
    TargetView,
    Verdict,
    Verifier,
    VerifyRequest,
    WrittenNeedle,
)
from needleforge.nemo.tables import SceneTables, index_tables
from needleforge.nemo.targets import Target, is_prominent, object_span, select_targets
from needleforge.nemo.templates import OBJECT_TEMPLATES, SCENE_TEMPLATES, TEMPLATES_VERSION

__all__ = [
    "NEMO_FAMILIES",
    "OBJECT_TEMPLATES",
    "SCENE_TEMPLATES",
    "TEMPLATES_VERSION",
    "Describer",
    "EmbeddedDescriber",
    "EmbeddedVerifier",
    "GenerationResult",
    "KeyframeSource",
    "NemoError",
    "NemoFamily",
    "NemoRegistry",
    "PlanSkip",
    "SceneTables",
    "SceneView",
    "Skip",
    "SkipRecord",
    "Target",
    "TargetView",
    "Verdict",
    "Verifier",
    "VerifyRequest",
    "WrittenNeedle",
    "build_backends",
    "default_nemo_registry",
    "excluded_terms",
    "generate",
    "index_tables",
    "is_prominent",
    "montage_id_for",
    "object_span",
    "plan_short_montage",
    "question_id_for",
    "select_negatives",
    "select_targets",
]
