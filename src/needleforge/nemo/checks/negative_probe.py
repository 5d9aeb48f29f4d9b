"""What planning asks a negative check, and what it gets back: the probe protocols
(:class:`NegativeProbe`, and the :class:`ExpectsTargets` and :class:`KnowsLabels` a probe
may also be), the :class:`Refusal` that keeps a scene out of a montage's negatives, and the
:class:`ProbeCost` a probe reports.

Why apart from :mod:`~needleforge.nemo.checks.negative_scan` (the tiled probe that
implements them): planning and the acceptor need only these, not the detector and frames.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from typing import Literal, Protocol, runtime_checkable

from needleforge.nemo.checks.instance import InstanceCost
from needleforge.nemo.targets import Target
from needleforge.records import Scene, Sighting


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """Why a scene may not be a negative of an object target: the ``label`` check saw the
    target's label there, or the ``instance`` check saw the target object itself."""

    check: Literal["label", "instance"]
    sighting: Sighting

    def describe(self) -> str:
        """One line for logs: which check, what, where, how sure."""
        return f"{self.check} check: {self.sighting.describe()}"


@runtime_checkable
class NegativeProbe(Protocol):
    """Answers "does ``scene`` show the object target after all?" for negative candidates."""

    def evidence(self, scene: Scene, target: Target, *, named: Collection[str] = (),
                 attire: Mapping[str, str] | None = None) -> Refusal | None:
        """Why ``scene`` may not be a negative of ``target`` (the object's label, or one of
        the other ``named`` labels its question names, seen there), or None. A label in
        ``attire`` (people described by their clothing colour) refuses only when a person
        seen could be the one described (:func:`needleforge.records.attire.could_be`)."""
        ...


@runtime_checkable
class ExpectsTargets(Protocol):
    """A probe that is told ahead which object targets will ask it about which scenes, so it
    can do their work together (:meth:`TiledProbe.expect`)."""

    def expect(self, target: Target, scenes: Iterable[Scene]) -> int:
        """Note that ``target`` may ask about ``scenes``; returns how many were noted."""
        ...


@runtime_checkable
class KnowsLabels(Protocol):
    """A probe that can tell, without looking at anything, what its label scans made so far
    refuse (:meth:`TiledProbe.label_refusal`): a bound on what :meth:`NegativeProbe.evidence`
    would let through."""

    def label_refusal(self, scene: Scene, target: Target) -> Refusal | None:
        """The label check's refusal of ``scene`` for object target ``target`` if the scene
        is scanned already; None otherwise."""
        ...


@dataclasses.dataclass(slots=True)
class ProbeCost:
    """What the probe spent: scenes looked at, frames, detector calls, seconds (wall, summed
    over the worker threads when the scans were made ahead)."""

    scenes: int = 0
    frames: int = 0
    detector_calls: int = 0
    #: Frames' worth of pixels the detector saw: with the change gate, under ``frames``.
    detector_area: float = 0.0
    seconds: float = 0.0
    reused: int = 0  #: scans taken from the store (preloaded) rather than looked at again
    instances: InstanceCost | None = None  #: the instance check's, when it is on

    def describe(self) -> str:
        """One line for the CLI: what was scanned, in how long, what was reused."""
        looked = (f", the detector on {self.detector_area:.0f} frames' worth"
                  if self.detector_area else "")
        line = (f"{self.scenes} scene(s) scanned ({self.frames} frame(s){looked} in "
                f"{self.seconds:.0f} s), {self.reused} stored scan(s) reused")
        if self.instances is not None:
            i = self.instances
            line += (f"; instance check: {i.pairs} target/scene pair(s) matched "
                     f"({i.frames} frame(s) in {i.seconds:.0f} s), {i.reused} stored")
            if i.unasked:
                line += f", {i.unasked} matched ahead and never asked"
            if i.unusable:
                line += f", {i.unusable} target(s) too small or flat to search for"
        return line
