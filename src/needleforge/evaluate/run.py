"""Running a model over a release's questions: a resumable predictions JSONL plus its metadata.

Each line is a :class:`~needleforge.evaluate.records.Prediction` the scorer reads:
``{"question_id", "response"}`` for grounding, ``{"question_id", "try", "response"}`` for a
multiple-choice try. Questions are grouped by video, so each video is decoded once
(:func:`~needleforge.evaluate.frame_sampling.sample_frames`) and its questions asked in a row;
videos run on a thread pool, and every answer is appended and flushed as soon as it is back
(when every answer is in, the file is rewritten in the questions' order: the same bytes
whichever thread answered first). A model whose ``needs_pixels`` attribute is false (the
random baseline: it reads only frame times) gets the sampled instants with a 1x1 black
placeholder image and no video is decoded.

Resuming: predictions already in ``out`` are kept and their questions skipped, so a run
interrupted halfway (or a crash on one video) loses at most the answers in flight. A torn last
line (the process killed mid-write) is dropped and rewritten. The sidecar ``<out>.meta.json``
records the model name and version, prompt style, frame sampling and needleforge version; a
resumed run with a different model, style or sampling is refused, since its answers would mix.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

import needleforge
from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import EvaluationError
from needleforge.evaluate.adapters import VideoLLM
from needleforge.evaluate.frame_sampling import DEFAULT_FPS, sample_frames, sample_times
from needleforge.evaluate.load import load_questions
from needleforge.evaluate.prompts import AnswerKind
from needleforge.evaluate.records import ChoiceQuestion, ReleaseQuestion
from needleforge.runtime.progress import OnCount

#: What a model that reads no pixels gets as every frame's image (read-only, shared).
_NO_PIXELS = np.zeros((1, 1, 3), dtype=np.uint8)
_NO_PIXELS.flags.writeable = False

#: Metadata keys that must match for a run to resume into an existing predictions file.
_RESUME_KEYS = ("model", "prompt_style", "fps", "max_frames", "max_side")


def meta_path(out: Path) -> Path:
    """The sidecar metadata file of a predictions file: ``<out>.meta.json``."""
    return out.with_name(out.name + ".meta.json")


def _answered(out: Path) -> set[tuple[str, int | None]]:
    """Keys already in ``out``; a torn last line is cut off so appending starts clean."""
    if not out.exists():
        return set()
    text = out.read_text(encoding="utf-8")
    lines = text.split("\n")
    keys: set[tuple[str, int | None]] = set()
    good = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            good += len(line) + 1
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number >= len(lines) - 1 and not text.endswith("\n"):
                break  # the last write was interrupted: drop it, it will be asked again
            raise EvaluationError(f"{out}:{number}: not valid JSON; cannot resume") from None
        if not isinstance(data, dict) or "question_id" not in data:
            raise EvaluationError(f"{out}:{number}: not a prediction; cannot resume")
        keys.add((str(data["question_id"]), data.get("try")))
        good += len(line) + 1
    if good < len(text):
        out.write_text(text[:good].rstrip("\n") + ("\n" if good else ""), encoding="utf-8")
    return keys


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    path = meta_path(out)
    if path.exists() and out.exists() and out.stat().st_size:
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvaluationError(f"cannot read {path} to resume {out}: {exc}") from exc
        if not isinstance(old, dict):
            raise EvaluationError(f"{path} is not a predictions metadata object")
        changed = {k: (old.get(k), meta[k]) for k in _RESUME_KEYS if old.get(k) != meta[k]}
        if changed:
            raise EvaluationError(f"{out} was written with other settings {changed} "
                                  "(old, new); use another --out or delete it")
        meta = {**old, "model_version": meta["model_version"],
                "needleforge_version": meta["needleforge_version"]}
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _record(question: ReleaseQuestion, response: str) -> dict[str, Any]:
    record: dict[str, Any] = {"question_id": question.question_id}
    if isinstance(question, ChoiceQuestion):
        record["try"] = question.try_index
    record["response"] = response
    return record


def run_model(questions_path: str | Path, *, model: VideoLLM, release_dir: str | Path,
              out: str | Path, max_frames: int | None = 64, fps: float = DEFAULT_FPS,
              max_side: int | None = 768, workers: int = 2,
              on_answer: OnCount | None = None) -> Path:
    """Ask ``model`` every question of ``questions_path`` not yet answered in ``out``.

    ``release_dir`` is what question ``video`` paths are relative to. ``on_answer(done, total)``
    is called after each answer (a progress bar). Returns ``out``.

    Raises:
        EvaluationError: a malformed questions file, an existing ``out`` that is not a
            predictions file or was written with other settings, or ``workers`` < 1.
        MediaError, BackendError: a video cannot be decoded or the model fails; answers
            already written stay, so the run can be resumed.
    """
    if workers < 1:
        raise EvaluationError(f"{workers = } must be >= 1")
    out, release_dir = Path(out), Path(release_dir)
    questions = load_questions(questions_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _answered(out)
    _write_meta(out, {
        "model": model.name, "model_version": model.version,
        "prompt_style": model.prompt_style, "fps": fps, "max_frames": max_frames,
        "max_side": max_side, "frame_sampling": "mid-interval, uniform thinning",
        "needleforge_version": needleforge.__version__,
        "questions": str(questions_path)})
    by_video: dict[str, list[ReleaseQuestion]] = defaultdict(list)
    for question in questions:
        if question.key not in done:
            by_video[question.video].append(question)
    total = sum(len(qs) for qs in by_video.values())
    lock = threading.Lock()
    progress = [0]

    def write(question: ReleaseQuestion, response: str) -> None:
        with lock, out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(_record(question, response), ensure_ascii=False) + "\n")
            progress[0] += 1
            if on_answer is not None:
                on_answer(progress[0], total)

    needs_pixels = bool(getattr(model, "needs_pixels", True))

    def ask_video(video: str, pending: Sequence[ReleaseQuestion]) -> None:
        frames: list[TimedFrame]
        if needs_pixels:
            frames = sample_frames(release_dir / video, fps=fps, max_frames=max_frames,
                                   max_side=max_side, duration_s=pending[0].duration_s)
        else:
            frames = [(t, _NO_PIXELS) for t in sample_times(
                pending[0].duration_s, fps=fps, max_frames=max_frames)]
        for question in pending:
            options = question.options if isinstance(question, ChoiceQuestion) else None
            kind: AnswerKind = "choice" if options is not None else "grounding"
            write(question, model.answer(frames, question.question, kind=kind, options=options))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(ask_video, video, qs) for video, qs in by_video.items()]
        try:
            for future in as_completed(futures):
                future.result()  # the first failure propagates; finished answers are on disk
        except BaseException:
            for future in futures:
                future.cancel()  # videos not started yet are not started at all
            raise
    _in_question_order(out, [question.key for question in questions])
    return out


def _in_question_order(out: Path, order: Sequence[tuple[str, int | None]]) -> None:
    """Rewrite the finished ``out`` with its lines in the questions' order (lines of other
    keys after them, as they were), so a run's bytes do not depend on which thread answered
    first, and a resumed run ends as a clean one. Written beside ``out`` and renamed over it:
    a run killed here keeps the appended file."""
    lines = [line for line in out.read_text(encoding="utf-8").split("\n") if line.strip()]
    by_key: dict[tuple[str, int | None], str] = {}
    for line in lines:
        data = json.loads(line)
        by_key.setdefault((str(data["question_id"]), data.get("try")), line)
    placed = [by_key.pop(key) for key in order if key in by_key]
    rest = list(by_key.values())  # first lines of keys no question has, in file order
    scratch = out.with_name(out.name + ".sorting")
    scratch.write_text("".join(line + "\n" for line in [*placed, *rest]), encoding="utf-8")
    scratch.replace(out)

