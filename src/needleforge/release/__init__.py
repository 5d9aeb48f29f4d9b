"""Releases: versioned benchmark folders with exports, a card, a changelog and a manifest.

:func:`build_release` writes ``releases/<name>/`` from the store's records (layout in
:mod:`needleforge.release.build`); :func:`answer_spans` is the rule that turns a montage plan
into a question's ground truth. :func:`publish` versions a release with DVC + a git tag
(pushed and verified before it is tagged); :func:`pull` and :func:`load_release` fetch or
read it back by tag, finding its folder through ``releases/index.json``.
"""

from needleforge.release.answers import Selection, answer_spans, select_questions
from needleforge.release.build import ReleaseData, ReleaseReport, build_release
from needleforge.release.dvc import LoadedRelease, load_release, pull
from needleforge.release.publish import PublishResult, publish

__all__ = [
    "LoadedRelease",
    "PublishResult",
    "ReleaseData",
    "ReleaseReport",
    "Selection",
    "answer_spans",
    "build_release",
    "load_release",
    "publish",
    "pull",
    "select_questions",
]
