"""Models by name: the one place that turns ``--model NAME --option KEY=VALUE`` into answers.

Used by ``needleforge evaluate`` and by the evaluate flow (``flows/evaluate.py``), so both
know the same models with the same options:

- models that watch the videos (:data:`VIDEO_MODEL_NAMES`): ``random`` (option ``seed``),
  ``embedded``, ``openai_http`` (``base_url``, ``model``, ``style``) and ``hf``
  (``model_dir``), run by :func:`~needleforge.evaluate.run.run_model` (resumable);
- the blind baselines (:data:`~needleforge.evaluate.blind.BLIND_NAMES`), which read the
  questions alone (option ``seed`` picks their fold split).

:func:`answer_models` answers with several models in one process, so the heavy imports and
the decoded frames' cache are paid once (the demo's evaluate stage runs seven models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from needleforge.errors import EvaluationError
from needleforge.evaluate.adapters import HfVideoLLM, OpenAIVideoLLM, VideoLLM
from needleforge.evaluate.baselines import EmbeddedGroundingBaseline, RandomBaseline
from needleforge.evaluate.blind import BLIND_NAMES, run_blind
from needleforge.evaluate.load import load_questions
from needleforge.evaluate.run import run_model
from needleforge.runtime.progress import OnCount

#: Models that watch the videos; the blind baselines (``BLIND_NAMES``) follow them.
VIDEO_MODEL_NAMES: tuple[str, ...] = ("random", "embedded", "openai_http", "hf")
MODEL_NAMES: tuple[str, ...] = (*VIDEO_MODEL_NAMES, *BLIND_NAMES)
#: The CPU baselines: what ``make demo`` and the evaluate flow score by default.
BASELINE_NAMES: tuple[str, ...] = ("random", "embedded", *BLIND_NAMES)
_OPTION_KEYS = {"random": {"seed"}, "embedded": set(), "hf": {"model_dir"},
                "openai_http": {"base_url", "model", "style"},
                **{name: {"seed"} for name in BLIND_NAMES}}


def parse_options(pairs: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--option``) as a dict.

    Raises:
        EvaluationError: a value without ``=`` or with an empty key.
    """
    options: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise EvaluationError(f"--option {pair!r}: options are KEY=VALUE")
        options[key.strip()] = value
    return options


def model_options(name: str) -> frozenset[str]:
    """The ``--option`` keys model ``name`` reads (none for an unknown name)."""
    return frozenset(_OPTION_KEYS.get(name, ()))


def check_models(names: Sequence[str], options: Mapping[str, str]) -> None:
    """Refuse an unknown model, or an option none of ``names`` reads, before any work.

    Raises:
        EvaluationError: naming the model or option and what is known.
    """
    for name in names:
        if name not in MODEL_NAMES:
            raise EvaluationError(f"unknown model {name!r}; known: {', '.join(MODEL_NAMES)}")
    read = set().union(*(_OPTION_KEYS[name] for name in names))
    unread = sorted(set(options) - read)
    if unread:
        reads = ", ".join(sorted(read)) or "none"
        raise EvaluationError(f"--option {', '.join(unread)}: not read by "
                              f"{', '.join(names)} (they read: {reads})")
    if "seed" in options:
        try:
            int(options["seed"])
        except ValueError:
            raise EvaluationError(f"--option seed={options['seed']!r} is not an integer"
                                  ) from None


def video_llm(name: str, options: Mapping[str, str]) -> VideoLLM:
    """The model adapter ``name`` (one of :data:`VIDEO_MODEL_NAMES`) built from ``options``.

    Raises:
        EvaluationError: an unknown model, a missing or bad option.
    """
    check_models([name], options)
    if name == "random":
        return RandomBaseline(seed=int(options.get("seed", "0")))
    if name == "embedded":
        return EmbeddedGroundingBaseline()
    if name == "openai_http":
        if "base_url" not in options or "model" not in options:
            raise EvaluationError("--model openai_http needs --option base_url=URL "
                                  "--option model=NAME")
        style = options.get("style", "video_first")
        if style not in ("video_first", "interleaved"):
            raise EvaluationError(f"style = {style!r}; known: video_first, interleaved")
        return OpenAIVideoLLM(options["base_url"], model=options["model"],
                              style="interleaved" if style == "interleaved" else "video_first")
    if name == "hf":
        if "model_dir" not in options:
            raise EvaluationError("--model hf needs --option model_dir=PATH")
        return HfVideoLLM(options["model_dir"])
    raise EvaluationError(f"model {name!r} reads no video (a blind baseline): use "
                          "answer_release")


def answer_release(name: str, options: Mapping[str, str], *, questions: Path,
                   release_dir: Path, out: Path, max_frames: int,
                   on_answer: OnCount | None = None) -> Path:
    """Answer ``questions`` with model ``name`` into ``out``: a blind baseline from the
    questions alone (no video is opened), any other model through
    :func:`~needleforge.evaluate.run.run_model` over the videos of ``release_dir``.
    ``on_answer(done, total)``: the answers not yet in ``out``, as each is written (a blind
    baseline's, all at once).

    Raises:
        EvaluationError: an unknown model, a missing or bad option, a malformed questions file.
    """
    check_models([name], options)
    if name in BLIND_NAMES:
        path = run_blind(questions, name=name, out=out, seed=int(options.get("seed", "0")))
        if on_answer is not None:
            n = len(load_questions(questions))
            on_answer(n, n)
        return path
    return run_model(questions, model=video_llm(name, options), release_dir=release_dir,
                     out=out, max_frames=max_frames, on_answer=on_answer)


def answer_models(names: Sequence[str], options: Mapping[str, str], *, questions: Path,
                  release_dir: Path, out_dir: Path, max_frames: int,
                  on_answer: OnCount | None = None) -> list[Path]:
    """Answer with each model of ``names`` into ``out_dir/<name>.jsonl``, in order, in this
    process; every name and option is checked before the first model runs, so a typo in the
    last name costs no minutes of the first. ``on_answer(done, total)`` counts the answers
    of every model (``total``: each model answers every question once; answers an earlier
    run left count as done when their model starts).

    Raises:
        EvaluationError: an unknown or repeated model, a bad option, a malformed questions file.
    """
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        raise EvaluationError(f"model(s) named twice: {', '.join(repeated)}")
    check_models(names, options)
    per_model = len(load_questions(questions)) if on_answer is not None else 0
    paths = []
    for index, name in enumerate(names):
        told = None if on_answer is None else _offset(on_answer, start=index * per_model,
                                                      per_model=per_model,
                                                      total=per_model * len(names))
        paths.append(answer_release(
            name, {k: v for k, v in options.items() if k in model_options(name)},
            questions=questions, release_dir=release_dir, out=out_dir / f"{name}.jsonl",
            max_frames=max_frames, on_answer=told))
        if on_answer is not None:  # all answered: also when nothing was left to ask
            on_answer((index + 1) * per_model, per_model * len(names))
    return paths


def _offset(on_answer: OnCount, *, start: int, per_model: int, total: int) -> OnCount:
    """One model's ``(done, pending)`` told as answers of all models: those before it
    (``start``), its answers from an earlier run, and ``done``."""
    return lambda done, pending: on_answer(start + per_model - pending + done, total)
