"""Scoring models on a release: records, response parsing, metrics, the scorer and its report.

Definitions and conventions of every metric: ``docs/metrics.md``.
"""

from needleforge.evaluate.files import load_predictions, load_questions
from needleforge.evaluate.metrics import (
    DEFAULT_MAP_THRESHOLDS,
    DEFAULT_RECALL_THRESHOLDS,
    GroundingResult,
    average_precision,
    evaluate_grounding,
    recall_at_kx,
    tiou,
)
from needleforge.evaluate.parse import ChoiceParse, SpanParse, is_refusal, parse_choice, parse_spans
from needleforge.evaluate.records import (
    ChoiceQuestion,
    GroundingQuestion,
    Prediction,
    Question,
    question_from_json,
    vnbench_group,
)
from needleforge.evaluate.report import (
    ChoiceScores,
    Coverage,
    GroundingScores,
    Issue,
    ScoreReport,
    VNBenchSummary,
)
from needleforge.evaluate.score import score, score_files
from needleforge.evaluate.spans import second_set

__all__ = [
    "DEFAULT_MAP_THRESHOLDS",
    "DEFAULT_RECALL_THRESHOLDS",
    "ChoiceParse",
    "ChoiceQuestion",
    "ChoiceScores",
    "Coverage",
    "GroundingQuestion",
    "GroundingResult",
    "GroundingScores",
    "Issue",
    "Prediction",
    "Question",
    "ScoreReport",
    "SpanParse",
    "VNBenchSummary",
    "average_precision",
    "evaluate_grounding",
    "is_refusal",
    "load_predictions",
    "load_questions",
    "parse_choice",
    "parse_spans",
    "question_from_json",
    "recall_at_kx",
    "score",
    "score_files",
    "second_set",
    "tiou",
    "vnbench_group",
]
