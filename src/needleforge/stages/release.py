"""The release stage: a release folder from the store and the VNBench set, gated by every GX
suite, and the earlier releases its changelog and contamination flags compare against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from needleforge.params import Params
from needleforge.quality import GateResult, QualityError
from needleforge.records.failures import StageFailure
from needleforge.release import ReleaseData, ReleaseReport, build_release
from needleforge.release.build import release_target
from needleforge.release.history import Fingerprint, latest_release, releases_by_build_time
from needleforge.review.human_verdicts import RoundOutcome
from needleforge.runtime.progress import OnCount
from needleforge.stages.review import record_verdict_file
from needleforge.stages.validate import release_gate
from needleforge.store import Store
from needleforge.store.human import human_verdicts as stored_human_verdicts


def previous_release(out_root: Path, *, name: str) -> Path | None:
    """The release under ``out_root`` to write ``name``'s changelog against, or None.

    That is the release (a folder with a ``manifest.json``) built last, by the build time
    in its ``build.json`` (see :mod:`needleforge.release.history`), not by name: a name
    such as ``sample`` says nothing of when it was built.

    Raises:
        ReleaseError: a release's ``build.json`` is malformed.
    """
    latest = latest_release(out_root, exclude=name)
    return latest.path if latest is not None else None


def earlier_releases(out_root: Path, *, name: str) -> list[Path]:
    """Every release under ``out_root`` other than ``name`` (folders with a
    ``manifest.json``), oldest build first: the ``earlier`` of a refresh's release.

    Raises:
        ReleaseError: a release's ``build.json`` is malformed.
    """
    return [b.path for b in releases_by_build_time(out_root, exclude=name)]


def read_release_data(db: Path) -> ReleaseData:
    """The records of the store ``db`` a release is built from (opened read-only).

    Raises:
        StoreError: the store cannot be opened.
    """
    with Store(db, read_only=True) as store:
        return ReleaseData(store.videos(), store.scenes(), store.scene_tags(), store.objects(),
                           store.montages(), store.questions(), store.verifications(),
                           stored_human_verdicts(store))


def release_store(*, db: Path, name: str, out_root: Path, render_dir: Path | None,
                  params: Params, previous: Path | None, vnbench_dir: Path | None = None,
                  earlier: Sequence[Path] = (), overwrite: bool = False,
                  on_gate: Callable[[GateResult], None] | None = None,
                  failures: Sequence[StageFailure] = (),
                  inputs: Fingerprint | None = None,
                  on_step: OnCount | None = None, human_verdicts: Path | None = None,
                  on_verdicts: Callable[[RoundOutcome], None] | None = None) -> ReleaseReport:
    """Build ``out_root/name`` from ``db`` (+ the VNBench folder), gated by every GX suite.

    ``human_verdicts`` is the verdict file (:mod:`needleforge.review.verdict_file`): when
    given, its verdicts are recorded in ``db`` first, since a store DVC rebuilt has lost the
    ones pulled into it; a missing file records none. ``on_verdicts`` sees what was recorded.

    The gate runs on the finished release before it is moved into place: the store suites,
    the release's questions (VNBench rows included) and its ``sources.json`` licences; its
    Data Docs land in ``<release>/quality``. ``earlier`` lists earlier releases whose
    sources are flagged as contamination. ``on_gate`` sees the gate's result (a report).
    ``failures``, ``inputs`` and ``on_step``: see :func:`needleforge.release.build_release`.

    Raises:
        ReleaseError: see :func:`needleforge.release.build_release`.
        StoreError: the store cannot be opened.
        VerdictError: the verdict file is malformed (nothing is recorded or built).
        QualityError: the gate failed (every failing expectation is listed); no release is
            written and an existing one is left as it was.
    """
    def gate(root: Path, families: frozenset[str]) -> GateResult:
        result = release_gate(db=db, root=root, out=root, params=params, families=families)
        if on_gate is not None:
            on_gate(result)
        if not result.passed:
            raise QualityError(f"release {name} failed its quality gate:\n{result.to_text()}")
        return result

    release_target(name=name, out_root=out_root, overwrite=overwrite)  # named before a bad store
    if human_verdicts is not None:
        recorded = record_verdict_file(db, human_verdicts)
        if on_verdicts is not None:
            on_verdicts(recorded)
    return build_release(data=read_release_data(db), name=name, out_root=out_root,
                         render_dir=render_dir, params=params, previous=previous,
                         overwrite=overwrite, vnbench_dir=vnbench_dir, earlier=earlier,
                         gate=gate, failures=failures, inputs=inputs, on_step=on_step)
