"""Our wording of the two questions a video-language model is asked when it is evaluated.

The release's ``question`` text says *what* to find; these templates say *how to answer*, so
the scorer's parser (:mod:`needleforge.evaluate.parse`) can read the reply: time ranges in
seconds for grounding, one option letter for multiple choice. A change here changes every
model's score, so the rendered prompts are snapshot-tested (``tests/evaluate/snapshots``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from needleforge.errors import EvaluationError
from needleforge.evaluate.records import LETTERS, N_OPTIONS

#: What kind of answer a question wants.
AnswerKind: TypeAlias = Literal["grounding", "choice"]

GROUNDING_INSTRUCTIONS = (
    "Answer with the time range(s) in seconds from the start of the video during which this "
    "happens, one range per occurrence, written as <start> - <end> (for example: 12 - 17). "
    "Separate several ranges with commas. Give only the ranges."
)
CHOICE_INSTRUCTIONS = "Answer with the letter of the correct option only."


def render_prompt(question: str, *, kind: AnswerKind,
                  options: Sequence[str] | None = None) -> str:
    """The text sent after the frames: the release question plus our answer instructions.

    Raises:
        EvaluationError: an empty question, an unknown ``kind``, or ``options`` missing for a
            multiple-choice question (or given for a grounding one), or not 4 options.
    """
    if not question.strip():
        raise EvaluationError("question must not be empty")
    if kind == "grounding":
        if options:
            raise EvaluationError("a grounding question takes no options")
        return f"{question.strip()}\n{GROUNDING_INSTRUCTIONS}"
    if kind == "choice":
        if options is None or len(options) != N_OPTIONS:
            raise EvaluationError(f"options = {options!r} must be {N_OPTIONS} strings")
        lines = [f"({letter}) {text}" for letter, text in zip(LETTERS, options, strict=True)]
        return "\n".join([question.strip(), *lines, CHOICE_INSTRUCTIONS])
    raise EvaluationError(f"{kind = } must be 'grounding' or 'choice'")
