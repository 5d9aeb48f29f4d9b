"""Typed parameters: one pydantic model per ``params.yaml`` section, and their defaults.

The one way in: ``from needleforge.params import Params, resolve_params, NemoParams, …``.
Each section has its module (:mod:`.studio`, :mod:`.nemo`, …) on :mod:`.base`; the whole
file's model and how a file is read are :mod:`.file`. Only leaves are imported here (errors,
``records.questions``), so any layer above may read params.
"""

from needleforge.params.evaluate import EvaluateParams
from needleforge.params.expand import BucketCaps, CellCaps, ExpandParams
from needleforge.params.file import (
    DEFAULT_DB,
    MOVED_KEYS,
    PARAMS_HELP,
    Params,
    ParamsError,
    load_params,
    parse_params,
    resolve_params,
)
from needleforge.params.ingest import IngestParams
from needleforge.params.nemo import DEFAULT_ABSTRACT_LABELS, NegativeCheckParams, NemoParams
from needleforge.params.objects import ObjectParams
from needleforge.params.quality import QualityParams
from needleforge.params.release import ReleaseParams
from needleforge.params.render import RenderParams
from needleforge.params.review import ReviewParams
from needleforge.params.runner import RunnerParams
from needleforge.params.scenes import SceneParams
from needleforge.params.studio import ProgramParams, StudioParams
from needleforge.params.vnbench import VNBenchParams, VNBenchTask

__all__ = [
    "DEFAULT_ABSTRACT_LABELS", "DEFAULT_DB", "MOVED_KEYS", "PARAMS_HELP", "BucketCaps",
    "CellCaps", "EvaluateParams", "ExpandParams", "IngestParams", "NegativeCheckParams",
    "NemoParams", "ObjectParams", "Params", "ParamsError", "ProgramParams", "QualityParams",
    "ReleaseParams", "RenderParams", "ReviewParams", "RunnerParams", "SceneParams",
    "StudioParams", "VNBenchParams", "VNBenchTask", "load_params", "parse_params",
    "resolve_params",
]
