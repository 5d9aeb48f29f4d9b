"""Negative pools at scale: which watched terms each scene holds, and where to draw scenes from.

Expansion asks "may scene S sit in a montage whose targets exclude terms X?" hundreds of
thousands of times, and the stage-2 answer (:func:`negatives.clashes`, a regex per tag per
term) is too slow for that. :class:`TermIndex` gives the same answer by set operations: it
fixes the **watched** terms up front (every excluded term and every described claim of the
questions being expanded) and computes, once per distinct tag or label, which watched terms
it holds under the shared rule :func:`~needleforge.records.phrases.holds` (``tabby cat``
holds ``cat``, ``cats`` holds ``cat``). A scene then holds the union over its tags and
object labels; "S clashes with X" is ``not held(S).isdisjoint(X)``, exactly the stage-2 rule
for any X made of watched terms.

:class:`ScenePool` lists candidate negatives by video and by program (same shooting style,
seed 001, App. D.3) in a fixed order, and :func:`lazy_shuffle` walks a list in a seeded
random order while paying only for the items actually taken.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from needleforge.nemo.tables import SceneTables
from needleforge.records import Scene, Video
from needleforge.records.phrases import holds, normalize, plural

_T = TypeVar("_T")
_TOKEN_RE = re.compile(r"[a-z0-9]+")


class TermIndex:
    """Which of the ``watched`` terms each scene of ``tables`` holds (tags + object labels).

    Results are cached per distinct term and per scene, so a scene costs one set union the
    first time it is asked about and a dict lookup afterwards.
    """

    def __init__(self, tables: SceneTables, *, watched: Iterable[str]) -> None:
        self._tables = tables
        self.watched = frozenset(w for w in (normalize(t) for t in watched) if w)
        # A watched term can only be held by a term containing the first token of one of
        # its forms (singular or plural) as a whole word: index the forms by that token.
        self._by_token: dict[str, set[str]] = defaultdict(set)
        self._tokenless: set[str] = set()
        for term in self.watched:
            for form in {term, normalize(plural(term))}:
                tokens = _TOKEN_RE.findall(form)
                if tokens:
                    self._by_token[tokens[0]].add(term)
                else:
                    self._tokenless.add(term)
        self._per_term: dict[str, frozenset[str]] = {}
        self._per_scene: dict[str, frozenset[str]] = {}

    def scene_terms(self, scene_id: str) -> frozenset[str]:
        """Normalized tags and object labels of a scene (what :class:`SceneView` calls terms)."""
        tags = self._tables.tags_by_scene.get(scene_id, ())
        objects = self._tables.objects_by_scene.get(scene_id, ())
        names = {normalize(t.tag) for t in tags} | {normalize(o.tag) for o in objects}
        names.discard("")
        return frozenset(names)

    def _term_holds(self, term: str) -> frozenset[str]:
        found = self._per_term.get(term)
        if found is None:
            candidates = set(self._tokenless)
            for token in _TOKEN_RE.findall(term):
                candidates |= self._by_token.get(token, set())
            if term in self.watched:
                candidates.add(term)
            found = frozenset(w for w in candidates if holds((term,), w))
            self._per_term[term] = found
        return found

    def held(self, scene_id: str) -> frozenset[str]:
        """The watched terms the scene holds as a tag or object label (or within one)."""
        found = self._per_scene.get(scene_id)
        if found is None:
            acc: set[str] = set()
            for term in self.scene_terms(scene_id):
                acc |= self._term_holds(term)
            found = frozenset(acc)
            self._per_scene[scene_id] = found
        return found

    def require_watched(self, terms: frozenset[str]) -> None:
        """Check once that ``terms`` are watched, before asking about them in a loop.

        Raises:
            ValueError: naming the terms the index does not watch (asking about them would
                silently answer "not held").
        """
        if not terms <= self.watched:
            raise ValueError(f"terms {sorted(terms - self.watched)} are not watched")

    def clashes(self, scene_id: str, excluded: frozenset[str]) -> bool:
        """True when the scene holds one of ``excluded`` (which must be watched terms).

        Raises:
            ValueError: see :meth:`require_watched`.
        """
        self.require_watched(excluded)
        return not self.held(scene_id).isdisjoint(excluded)


class ScenePool:
    """Candidate negatives grouped by video and by program, each in a fixed order.

    A video's program comes from its :class:`~needleforge.records.Video` record; scenes of
    videos not among ``videos`` are not candidates.
    """

    def __init__(self, tables: SceneTables, *, videos: Iterable[Video]) -> None:
        program_of = {v.video_id: v.program for v in videos}
        self.program_of: Mapping[str, str] = {
            vid: program_of.get(vid, vid) for vid in tables.video_ids()
        }
        by_program: dict[str, list[Scene]] = defaultdict(list)
        videos_of: dict[str, list[str]] = defaultdict(list)
        for vid in tables.video_ids():
            by_program[self.program_of[vid]].extend(tables.scenes_by_video[vid])
            videos_of[self.program_of[vid]].append(vid)
        self._tables = tables
        self._by_program = {p: tuple(s) for p, s in by_program.items()}
        self.videos_of: Mapping[str, tuple[str, ...]] = {
            p: tuple(v) for p, v in videos_of.items()
        }

    def video_scenes(self, video_id: str) -> tuple[Scene, ...]:
        """Scenes of one video, by index."""
        return tuple(self._tables.scenes_by_video.get(video_id, ()))

    def program_scenes(self, program: str) -> tuple[Scene, ...]:
        """Scenes of every video of ``program``, by video id then index."""
        return self._by_program.get(program, ())


def lazy_shuffle(items: Sequence[_T], *, rng: random.Random) -> Iterator[_T]:
    """``items`` in a uniformly random order, drawn one at a time (Fisher–Yates, lazily).

    Copying the list is one C-level operation; each item taken costs one ``randrange``, so
    a caller that stops after k of n items pays O(n) copy + O(k) draws, not O(n) draws.
    """
    pool = list(items)
    for i in range(len(pool)):
        j = rng.randrange(i, len(pool))
        pool[i], pool[j] = pool[j], pool[i]
        yield pool[i]
