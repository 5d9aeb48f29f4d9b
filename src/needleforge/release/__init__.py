"""Releases: versioned benchmark folders with exports, a card, a changelog and a manifest.

:func:`build_release` writes ``releases/<name>/`` from the store (layout in
:mod:`needleforge.release.build`); :func:`answer_spans` is the rule that turns a montage plan
into a question's ground truth.
"""

from needleforge.release.answers import Selection, answer_spans, select_questions
from needleforge.release.build import ReleaseReport, build_release

__all__ = [
    "ReleaseReport",
    "Selection",
    "answer_spans",
    "build_release",
    "select_questions",
]
