"""VLMEvalKit datasets for a needleforge release (shipped as ``exports/vlmevalkit/``).

Drop-in use (read against ``open-compass/VLMEvalKit`` commit e8e78f0): copy this file into
``vlmeval/dataset/``, add ``from .needleforge_vlmevalkit import NeedleforgeVideoMCQ,
NeedleforgeVideoGrounding`` to ``vlmeval/dataset/__init__.py``, and run ``run.py --config``
with a ``data`` entry such as ``{"needleforge_video_mcq": {"class": "NeedleforgeVideoMCQ",
"dataset": "needleforge_video_mcq", "nframe": 16, "release_dir": "/path/to/release"}}``.

- :class:`NeedleforgeVideoMCQ` reads ``needleforge_mcq.tsv``: VNBench tries in VLMEvalKit's
  multiple-choice conventions (``index``, ``question``, ``A``–``D``, ``answer`` letter,
  ``category`` = task, ``l2-category`` = retrieval / ordering / counting) with its circular
  group key: ``g_index`` is the sample's try-0 row, and try ``t`` has ``index = g_index +
  t * 1_000_000`` (the ``index % 1e6`` convention of its ``mcq_circular_eval``).
- :class:`NeedleforgeVideoGrounding` reads ``needleforge_grounding.tsv``: one row per
  grounding question, ``answer`` = the target spans as JSON.

The release folder is the documented root: ``video_path`` is relative to it and ``video`` is
the same path without ``.mp4`` (VLMEvalKit's frame extraction appends it). The folder is found
from ``release_dir=``, else ``$NEEDLEFORGE_RELEASE_DIR``, else two folders above this file.

Prompts are needleforge's own (``needleforge.evaluate.prompts``, snapshot-tested to match).
Scoring uses the needleforge scorer (``pip install`` needleforge where VLMEvalKit runs), so the
numbers equal ``needleforge score``: Recall@1x and mAP for grounding (tIoU on exact seconds,
the paper's whole-second-set figures beside), circular accuracy and the
VNBench overall for multiple choice. Without needleforge, :func:`write_needleforge_predictions`
turns VLMEvalKit's prediction file into a predictions JSONL for ``needleforge score``.

Only ``vlmeval`` imports are guarded: this module imports (and its prompts and data loading
work) without VLMEvalKit; frame extraction then needs VLMEvalKit (decord).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

MCQ_TSV = "needleforge_mcq.tsv"
GROUNDING_TSV = "needleforge_grounding.tsv"
EXPORT_DIR = "exports/vlmevalkit"
#: Try ``t`` of a sample has ``index = g_index + t * CIRCULAR_OFFSET`` (VLMEvalKit's 1e6).
CIRCULAR_OFFSET = 1_000_000
MCQ_COLUMNS: tuple[str, ...] = (
    "index", "g_index", "question_id", "try", "video", "video_path", "question", "A", "B", "C",
    "D", "answer", "category", "l2-category", "bucket", "duration", "needle_type", "n_needles")
GROUNDING_COLUMNS: tuple[str, ...] = (
    "index", "question_id", "video", "video_path", "question", "answer", "category", "bucket",
    "duration", "needle_type", "n_needles")
GROUNDING_INSTRUCTIONS = (
    "Answer with the time range(s) in seconds from the start of the video during which this "
    "happens, one range per occurrence, written as <start> - <end> (for example: 12 - 17). "
    "Separate several ranges with commas. Give only the ranges."
)
CHOICE_INSTRUCTIONS = "Answer with the letter of the correct option only."
LETTERS = "ABCD"


class _StandIn:
    """What this module needs of ``VideoBaseDataset`` when VLMEvalKit is not installed."""

    MODALITY = "VIDEO"

    def __init__(self, dataset: str = "", pack: bool = False, nframe: int = 0,
                 fps: float = -1) -> None:
        self.dataset_name = dataset
        ret = self.prepare_dataset(dataset)
        self.data_root: str = ret["root"]
        self.data_file: str = ret["data_file"]
        self.data = pd.read_csv(self.data_file, sep="\t")
        self.videos = sorted(set(self.data["video"]))
        self.pack, self.nframe, self.fps = pack, nframe, fps

    def prepare_dataset(self, dataset: str) -> dict[str, str]:
        raise NotImplementedError

    def save_video_frames(self, video: str) -> list[str]:
        raise RuntimeError("frame extraction needs VLMEvalKit (and decord); pass "
                           "video_llm=True to send the video file instead")


if TYPE_CHECKING:
    _Base = _StandIn
else:
    try:
        from vlmeval.dataset.video_base import VideoBaseDataset as _Base
    except ImportError:  # VLMEvalKit not installed: the stand-in keeps the module usable
        _Base = _StandIn


def find_release_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The release root: ``explicit``, else ``$NEEDLEFORGE_RELEASE_DIR``, else two folders up.

    Raises:
        FileNotFoundError: the folder holds no ``exports/vlmevalkit`` TSV (names the path).
    """
    env = os.environ.get("NEEDLEFORGE_RELEASE_DIR")
    root = Path(explicit) if explicit else Path(env) if env else Path(__file__).resolve().parents[2]
    if not (root / EXPORT_DIR).is_dir():
        raise FileNotFoundError(
            f"{root / EXPORT_DIR} does not exist: pass release_dir= or set "
            "NEEDLEFORGE_RELEASE_DIR to a needleforge release folder")
    return root


def render_prompt(question: str, options: Sequence[str] | None = None) -> str:
    """needleforge's prompt text: the question, lettered options, the answer instructions."""
    if options is None:
        return f"{question.strip()}\n{GROUNDING_INSTRUCTIONS}"
    lines = [f"({letter}) {text}" for letter, text in zip(LETTERS, options, strict=True)]
    return "\n".join([question.strip(), *lines, CHOICE_INSTRUCTIONS])


def frame_times(duration_s: float, n_frames: int, *, nframe: int, fps: float) -> list[float]:
    """When VLMEvalKit's frames were taken: ``nframe`` evenly inside, or every ``1/fps`` s."""
    if nframe > 0:
        return [duration_s * i / (nframe + 1) for i in range(1, n_frames + 1)]
    return [i / fps for i in range(n_frames)]


def _load_table(path: str) -> pd.DataFrame:
    """A VLMEvalKit prediction file (xlsx, tsv, csv, json, jsonl or pkl) as a table."""
    suffix = Path(path).suffix.lower()
    if suffix == ".xlsx":
        return pd.read_excel(path)
    if suffix in (".tsv", ".csv"):
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    if suffix in (".json", ".jsonl"):
        return pd.read_json(path, lines=suffix == ".jsonl")
    if suffix == ".pkl":
        return pd.DataFrame(pd.read_pickle(path))
    raise ValueError(f"{path}: unknown prediction file type {suffix!r}")


def needleforge_predictions(table: pd.DataFrame, data: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of a VLMEvalKit prediction ``table`` as needleforge prediction records.

    ``data`` is the dataset's TSV: each ``index`` names a question (and a try for multiple
    choice); a missing ``prediction`` is an empty response.

    Raises:
        KeyError: an ``index`` that is not in ``data`` (a prediction file of another set).
    """
    rows = data.set_index("index")
    out = []
    for index, response in zip(table["index"], table["prediction"], strict=True):
        row = rows.loc[int(index)]
        record: dict[str, Any] = {"question_id": str(row["question_id"]),
                                  "response": "" if pd.isna(response) else str(response)}
        if "try" in rows.columns:
            record["try"] = int(row["try"])
        out.append(record)
    return out


def write_needleforge_predictions(eval_file: str, out: str, *,
                                  release: str | os.PathLike[str] | None = None) -> int:
    """Write VLMEvalKit's ``eval_file`` as a JSONL for ``needleforge score``; how many lines.

    Raises:
        FileNotFoundError: the release folder cannot be found (see :func:`find_release_dir`).
        KeyError: a prediction for an index the release does not have.
    """
    table = _load_table(eval_file)
    name = MCQ_TSV if "g_index" in table.columns else GROUNDING_TSV
    data = pd.read_csv(find_release_dir(release) / EXPORT_DIR / name, sep="\t")
    records = needleforge_predictions(table, data)
    Path(out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                         encoding="utf-8")
    return len(records)


class _NeedleforgeDataset(_Base):
    """What both datasets share: finding the release, prompts, scoring with needleforge."""

    TSV = ""
    TYPE = "Video-MCQ"
    DATASET_NAME = ""

    def __init__(self, dataset: str = "", nframe: int = 0, fps: float = -1,
                 release_dir: str | None = None) -> None:
        self.release_root = find_release_dir(release_dir)
        super().__init__(dataset=dataset, nframe=nframe, fps=fps)

    @classmethod
    def supported_datasets(cls) -> list[str]:
        """The dataset names this class answers to."""
        return [cls.DATASET_NAME]

    def prepare_dataset(self, dataset: str) -> dict[str, str]:
        """``root`` (the release folder) and ``data_file`` (this dataset's TSV).

        Raises:
            FileNotFoundError: the TSV is missing (names the path).
        """
        data_file = self.release_root / EXPORT_DIR / self.TSV
        if not data_file.is_file():
            raise FileNotFoundError(f"{data_file} does not exist (is {self.release_root} a "
                                    "needleforge release with this export?)")
        return {"root": str(self.release_root), "data_file": str(data_file)}

    def _line(self, line: int | pd.Series | dict[str, Any]) -> dict[str, Any]:
        if isinstance(line, int):
            return dict(self.data.iloc[line])
        return dict(line)

    def _visual(self, line: dict[str, Any], video_llm: bool) -> tuple[list[dict[str, str]],
                                                                       str]:
        """The video (or its frames) as messages, and a lead sentence saying when they are."""
        duration = float(line["duration"])
        if video_llm:
            path = str(Path(self.data_root) / str(line["video_path"]))
            return [{"type": "video", "value": path}], f"The video lasts {duration:.1f} s."
        frames = self.save_video_frames(str(line["video"]))
        times = frame_times(duration, len(frames), nframe=self.nframe, fps=self.fps)
        lead = (f"The video lasts {duration:.1f} s; the {len(frames)} frames are taken at "
                + ", ".join(f"{t:.1f}" for t in times) + " s.")
        return [{"type": "image", "value": f} for f in frames], lead

    def build_prompt(self, line: int | pd.Series | dict[str, Any],
                     video_llm: bool = False) -> list[dict[str, str]]:
        """VLMEvalKit's message list: the video or its frames, then the prompt text."""
        row = self._line(line)
        visual, lead = self._visual(row, video_llm)
        options = [str(row[c]) for c in LETTERS] if "A" in row else None
        text = f"{lead}\n{render_prompt(str(row['question']), options)}"
        return [*visual, {"type": "text", "value": text}]

    def evaluate(self, eval_file: str, **judge_kwargs: Any) -> dict[str, float]:
        """Score a prediction file with the needleforge scorer; percentages by metric.

        Also writes the full report as ``<eval_file>_needleforge.json``.

        Raises:
            ImportError: needleforge is not installed (use
                :func:`write_needleforge_predictions` and ``needleforge score`` instead).
        """
        try:
            from needleforge.evaluate import Prediction, load_questions, score
        except ImportError as exc:
            raise ImportError(
                "scoring needs the needleforge package; or run write_needleforge_predictions("
                "eval_file, 'predictions.jsonl') and `needleforge score --questions "
                "questions.jsonl --predictions predictions.jsonl` where it is installed"
            ) from exc
        records = needleforge_predictions(_load_table(eval_file), self.data)
        asked = {r["question_id"] for r in records}
        questions = [q for q in load_questions(self.release_root / "questions.jsonl")
                     if q.question_id in asked]
        predictions = [Prediction(question_id=r["question_id"], try_index=r.get("try"),
                                  response=r["response"]) for r in records]
        report = score(questions, predictions)
        Path(f"{eval_file}_needleforge.json").write_text(
            json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return self.headline(report.to_dict())

    def headline(self, report: dict[str, Any]) -> dict[str, float]:
        """The numbers VLMEvalKit prints, in percent."""
        raise NotImplementedError


class NeedleforgeVideoMCQ(_NeedleforgeDataset):
    """VNBench tries of a release; scored by circular accuracy and the VNBench overall."""

    TSV = MCQ_TSV
    TYPE = "Video-MCQ"
    DATASET_NAME = "needleforge_video_mcq"

    def __init__(self, dataset: str = "needleforge_video_mcq", nframe: int = 0,
                 fps: float = -1, release_dir: str | None = None) -> None:
        super().__init__(dataset=dataset, nframe=nframe, fps=fps, release_dir=release_dir)

    def headline(self, report: dict[str, Any]) -> dict[str, float]:
        """VNBench overall (its 9 official tasks), circular accuracy overall and per task."""
        out: dict[str, float] = {}
        if report["vnbench"] is not None:
            out["VNBench overall"] = 100 * report["vnbench"]["overall"]
        choice = report["choice"]
        out["circular accuracy"] = 100 * choice["all"]["all"]["circular_accuracy"]
        for task, scores in choice.get("task", {}).items():
            out[f"circular {task}"] = 100 * scores["circular_accuracy"]
        return out


class NeedleforgeVideoGrounding(_NeedleforgeDataset):
    """Grounding questions of a release; scored by Recall@1x and average mAP (tIoU on exact
    seconds), with the NeMo paper's whole-second-set figures beside, named as such."""

    TSV = GROUNDING_TSV
    TYPE = "Video-VQA"
    DATASET_NAME = "needleforge_video_grounding"

    def __init__(self, dataset: str = "needleforge_video_grounding", nframe: int = 0,
                 fps: float = -1, release_dir: str | None = None) -> None:
        super().__init__(dataset=dataset, nframe=nframe, fps=fps, release_dir=release_dir)

    def headline(self, report: dict[str, Any]) -> dict[str, float]:
        """Recall@1x at each tIoU threshold and the average mAP, over all questions: on exact
        seconds, then on the paper's whole-second sets (which inflate short windows' overlap)."""
        scores = report["grounding"]["all"]["all"]
        out = {f"R@1x tIoU {t}": 100 * v for t, v in scores["recall"].items()}
        out["average mAP"] = 100 * scores["average_map"]
        paper = scores["second_set"]
        out.update({f"R@1x tIoU {t} (whole-second sets)": 100 * v
                    for t, v in paper["recall"].items()})
        out["average mAP (whole-second sets)"] = 100 * paper["average_map"]
        return out
