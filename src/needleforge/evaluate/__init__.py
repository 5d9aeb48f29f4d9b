"""Scoring models on a release: records, parsing, metrics, the scorer, adapters, leaderboard.

Definitions and conventions of every metric: ``docs/metrics.md``.
"""

from needleforge.evaluate.adapters import HfVideoLLM, OpenAIVideoLLM, VideoLLM, tile_frames
from needleforge.evaluate.baselines import EmbeddedGroundingBaseline, RandomBaseline
from needleforge.evaluate.blind import (
    BLIND_NAMES,
    BlindBaseline,
    blind_baseline,
    blind_predictions,
    run_blind,
)
from needleforge.evaluate.frame_sampling import sample_frames, sample_times
from needleforge.evaluate.leaderboard import Leaderboard, LeaderboardRow, leaderboard
from needleforge.evaluate.load import load_prediction_file, load_predictions, load_questions
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
from needleforge.evaluate.prompts import AnswerKind, render_prompt
from needleforge.evaluate.qvhighlights import prediction_from_submission, qvhighlights_scores
from needleforge.evaluate.records import (
    ChoiceQuestion,
    GroundingQuestion,
    Prediction,
    ReleaseQuestion,
    question_from_json,
    vnbench_group,
)
from needleforge.evaluate.report import (
    ChoiceScores,
    Coverage,
    GroundingScores,
    Issue,
    QVHighlightsScores,
    ScoreReport,
    VNBenchSummary,
)
from needleforge.evaluate.run import meta_path, run_model
from needleforge.evaluate.score import score, score_files
from needleforge.evaluate.spans import second_set

__all__ = [
    "BLIND_NAMES",
    "DEFAULT_MAP_THRESHOLDS",
    "DEFAULT_RECALL_THRESHOLDS",
    "AnswerKind",
    "BlindBaseline",
    "ChoiceParse",
    "ChoiceQuestion",
    "ChoiceScores",
    "Coverage",
    "EmbeddedGroundingBaseline",
    "GroundingQuestion",
    "GroundingResult",
    "GroundingScores",
    "HfVideoLLM",
    "Issue",
    "Leaderboard",
    "LeaderboardRow",
    "OpenAIVideoLLM",
    "Prediction",
    "QVHighlightsScores",
    "RandomBaseline",
    "ReleaseQuestion",
    "ScoreReport",
    "SpanParse",
    "VNBenchSummary",
    "VideoLLM",
    "average_precision",
    "blind_baseline",
    "blind_predictions",
    "evaluate_grounding",
    "is_refusal",
    "leaderboard",
    "load_prediction_file",
    "load_predictions",
    "load_questions",
    "meta_path",
    "parse_choice",
    "parse_spans",
    "prediction_from_submission",
    "question_from_json",
    "qvhighlights_scores",
    "recall_at_kx",
    "render_prompt",
    "run_blind",
    "run_model",
    "sample_frames",
    "sample_times",
    "score",
    "score_files",
    "second_set",
    "tile_frames",
    "tiou",
    "vnbench_group",
]
