"""Re-checking a verified question on the new negatives of its expanded montage.

The short question already passed its verifier on the short montage; what changes with
expansion is the set of scenes it must not match. Every scene of the expanded montage
other than the question's own target segments is a **distractor**: the negatives and, in a
montage with several targets, the other targets' scenes. The verdict reuses the rules the
embedded evidence verifier (``embedded-evidence``) applies to negatives, on the tables:

1. **Disjointness** (stage-2 negative rule, :func:`negatives.excluded_terms`): no distractor
   holds an excluded term — the object's label, or the scene's top tags — as a tag or object
   label, or inside one (``tabby cat`` holds ``cat``). For object needles this is stricter
   than the embedded verifier, which lets a differently coloured cat pass: any carrier of
   the label fails here.
2. **Uniqueness of the scene description** (embedded rule for scene needles): no distractor
   holds *all* the target's terms that the description names.

The description-side checks of the embedded verifier (the text names the label, the target
holds every term named, subtitles are not the only evidence) depend on the target and the
text only, which expansion does not change, so they stand from the short verdict. The check
is implemented here on :class:`~needleforge.nemo.pool.TermIndex` sets rather than by calling
the embedded verifier, because that one costs milliseconds per negative and a long montage
holds a hundred; ``tests/nemo/test_expand_recheck.py`` checks that both agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from needleforge.nemo.pool import TermIndex
from needleforge.nemo.sources import Source
from needleforge.records import Montage, Verification

#: Recorded as ``verifications.verifier`` / ``model_version`` of every expanded question.
RECHECK_VERIFIER = "expand-recheck"
RECHECK_VERSION = "1"
#: How many failing distractors a reason lists.
_LISTED = 3


def _quoted(terms: Sequence[str] | frozenset[str]) -> str:
    return ", ".join(repr(t) for t in sorted(terms))


def distractor_scenes(montage: Montage, *, target_id: str) -> tuple[str, ...]:
    """Scene ids of every segment of ``montage`` that is not a piece of ``target_id``."""
    return tuple(s.scene_id for s in montage.segments
                 if not (s.role == "target" and s.target_id == target_id))


def recheck(
    source: Source, montage: Montage, *, question_id: str, index: TermIndex
) -> Verification:
    """The verdict of the expanded copy ``question_id`` of ``source`` in ``montage``.

    Raises:
        ValueError: when the source's terms are not watched by ``index`` (it was built for
            other sources).
    """
    index.require_watched(source.excluded | source.claims)
    distractors = distractor_scenes(montage, target_id=source.target_id)
    clashing = [sid for sid in distractors if not index.held(sid).isdisjoint(source.excluded)]
    if clashing:
        shown = "; ".join(f"{sid} holds {_quoted(index.held(sid) & source.excluded)}"
                          for sid in clashing[:_LISTED])
        return Verification(question_id, RECHECK_VERIFIER, RECHECK_VERSION, False,
                            f"not disjoint: {len(clashing)} of {len(distractors)} distractors "
                            f"hold an excluded term ({shown})")
    if source.claims:
        alike = [sid for sid in distractors if source.claims <= index.held(sid)]
        if alike:
            return Verification(question_id, RECHECK_VERIFIER, RECHECK_VERSION, False,
                                f"ambiguous: {_quoted(alike[:_LISTED])} also hold all of "
                                f"{_quoted(source.claims)}")
    named = f"; none holds all of {_quoted(source.claims)}" if source.claims else ""
    return Verification(question_id, RECHECK_VERIFIER, RECHECK_VERSION, True,
                        f"disjoint: none of {len(distractors)} distractors holds "
                        f"{_quoted(source.excluded)}{named}; short verdict by "
                        f"{', '.join(source.verified_by)} stands")
