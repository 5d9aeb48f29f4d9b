"""The quality gate (pipeline stage 8): every suite over the store and the release, one verdict.

:func:`run_gate` validates each store table (and the release's question records, when given)
against its code-defined suite, builds the GX Data Docs into ``out_dir/quality/`` as the
release's quality report, writes ``summary.json`` beside it, and returns every failing
expectation by name. The release must not ship when ``GateResult.passed`` is false.

Great Expectations is imported only when a gate runs (it costs seconds to import), so this
module is cheap to import from the CLI.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needleforge.params import QualityParams
from needleforge.quality.results import Failure, GateResult, QualityError, SuiteOutcome
from needleforge.runtime.progress import OnCount, Steps

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.data_context.data_context.file_data_context import (
        FileDataContext,
    )
    from great_expectations.datasource.fluent.pandas_datasource import PandasDatasource

    from needleforge.quality.suites import SuiteSpec

#: The release's quality report folder, under the release (``out_dir``).
REPORT_DIR = "quality"
SUMMARY_FILE = "summary.json"
# What a previous report left in REPORT_DIR; removed first so no stale page survives.
_REPORT_ENTRIES = ("index.html", SUMMARY_FILE, "expectations", "validations", "static")
#: Suite names, in run order (kept here so validating ``only`` needs no GX import).
SUITE_NAMES = ("videos", "scenes", "objects", "montages", "montage_segments", "questions",
               "verifications", "release", "release_sources", "release_bias")
#: Progress steps of a gate run: the release's tables made, each suite, the Data Docs built.
GATE_STEPS = len(SUITE_NAMES) + 2


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseInputs:
    """A release folder's records for the release suites (see :func:`read_release`).

    ``sources`` are the ``sources.json`` entries, checked against ``day`` and
    ``required_scopes``; ``root`` and ``video_families`` say which videos must exist.
    """

    questions: Sequence[Any]
    sources: Sequence[Any]
    root: Path
    video_families: frozenset[str]
    day: dt.date
    required_scopes: tuple[str, ...]


def run_gate(
    *,
    tables: Mapping[str, pd.DataFrame],
    release_questions: Sequence[Mapping[str, Any]] | None,
    out_dir: Path,
    params: QualityParams,
    only: Collection[str] | None = None,
    release: ReleaseInputs | None = None,
    on_step: OnCount | None = None,
) -> GateResult:
    """Validate the store's ``tables`` (one DataFrame per store suite, by suite name: what
    :func:`needleforge.stages.validate.store_frames` reads) and the release's question records,
    and build the quality report.

    A suite whose table is empty is skipped with a note, except ``videos`` (a pipeline with
    no sources is broken) and ``release`` when records are given (an empty release is
    broken): those run and fail on their row-count expectation. ``release_questions`` None
    skips the release suite unless ``release`` (a whole release folder) is given, which also
    runs ``release_sources`` and checks videos and source listing. Either way the release's
    records are audited for priors (``release_bias``: every blind baseline within
    ``params.blind_margin`` of random, :mod:`needleforge.quality.bias`). ``only`` restricts the
    run to the named suites (e.g. to check a release alone); None runs them all. Malformed
    data never raises: it fails an expectation. ``on_step(done, total)`` is called after
    the release's tables are made, after each suite (run or skipped) and after the Data Docs
    are built (:data:`GATE_STEPS` in all).

    Raises:
        QualityError: an unknown suite in ``only``; the report folder cannot be written, or
            GX itself failed.
    """
    _check_only(only)
    from needleforge.quality.context import quiet_gx_env

    quiet_gx_env()  # before GX is first imported, below
    from needleforge.quality.release_frame import ReleaseContext, release_frame, sources_frame

    step = Steps(GATE_STEPS, on_step)
    tables = dict(tables)
    if release is not None:
        licensed = frozenset(str(e.get("video_id")) for e in release.sources
                             if isinstance(e, Mapping))
        tables["release"] = release_frame(release.questions, context=ReleaseContext(
            root=release.root, video_families=release.video_families, licensed=licensed))
        tables["release_sources"] = sources_frame(release.sources, day=release.day,
                                                  scopes=release.required_scopes)
    elif release_questions is not None:
        tables["release"] = release_frame(release_questions)
    records = release.questions if release is not None else release_questions
    if records is not None:
        from needleforge.quality.bias import audit_release, bias_frame

        tables["release_bias"] = bias_frame(audit_release(records, margin=params.blind_margin))
    step()
    docs_dir = out_dir / REPORT_DIR
    _prepare_report_dir(docs_dir)
    with tempfile.TemporaryDirectory(prefix="needleforge-gx-") as tmp:
        outcomes, failures = _validate_all(Path(tmp), tables=tables, docs_dir=docs_dir,
                                           params=params, only=only, step=step)
    result = GateResult(
        passed=not failures, failures=failures, suites=outcomes,
        docs_index=docs_dir / "index.html", summary_path=docs_dir / SUMMARY_FILE)
    try:
        result.write_summary(docs_dir / SUMMARY_FILE)
    except OSError as err:
        raise QualityError(f"{docs_dir}: cannot write {SUMMARY_FILE} ({err})") from None
    return result


def _check_only(only: Collection[str] | None) -> None:
    if only is None:
        return
    if isinstance(only, str):
        raise QualityError(f"only = {only!r} must be a collection of suite names, not a str")
    unknown = sorted(set(only) - set(SUITE_NAMES))
    if unknown:
        raise QualityError(f"unknown suites {unknown}; choose from {list(SUITE_NAMES)}")


def _prepare_report_dir(docs_dir: Path) -> None:
    try:
        docs_dir.mkdir(parents=True, exist_ok=True)
        for name in _REPORT_ENTRIES:
            entry = docs_dir / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            elif entry.exists() or entry.is_symlink():
                entry.unlink()
    except OSError as err:
        raise QualityError(f"{docs_dir}: cannot prepare the quality report folder ({err})") \
            from None


def _validate_all(
    root: Path, *, tables: Mapping[str, pd.DataFrame], docs_dir: Path, params: QualityParams,
    only: Collection[str] | None, step: Callable[[], None],
) -> tuple[list[SuiteOutcome], list[Failure]]:
    """Run every suite in a fresh context at ``root``, then build the Data Docs."""
    from great_expectations.exceptions.exceptions import GreatExpectationsError

    from needleforge.quality.context import DOCS_SITE, open_run_context

    try:
        context = open_run_context(root, docs_dir=docs_dir)
        outcomes, failures = _run_suites(context, tables=tables, params=params, only=only,
                                         step=step)
        context.build_data_docs(site_names=[DOCS_SITE])
        step()
    except GreatExpectationsError as err:
        raise QualityError(f"Great Expectations failed: {err}") from err
    except OSError as err:
        raise QualityError(f"cannot write the GX context or report ({err})") from err
    return outcomes, failures


def _run_suites(
    context: FileDataContext, *, tables: Mapping[str, pd.DataFrame], params: QualityParams,
    only: Collection[str] | None, step: Callable[[], None],
) -> tuple[list[SuiteOutcome], list[Failure]]:
    from needleforge.quality.runner import add_datasource
    from needleforge.quality.suites import SUITES

    source = add_datasource(context)
    outcomes: list[SuiteOutcome] = []
    failures: list[Failure] = []
    for spec in SUITES:
        outcome, failed = _run_suite(context, source=source, spec=spec,
                                     frame=tables.get(spec.name), params=params, only=only)
        outcomes.append(outcome)
        failures.extend(failed)
        step()
    return outcomes, failures


def _run_suite(
    context: FileDataContext, *, source: PandasDatasource, spec: SuiteSpec,
    frame: pd.DataFrame | None, params: QualityParams, only: Collection[str] | None,
) -> tuple[SuiteOutcome, list[Failure]]:
    """One suite's outcome and failures (a note when it is skipped)."""
    from needleforge.quality.runner import validate_frame

    if only is not None and spec.name not in only:
        return SuiteOutcome(spec.name, "skipped", 0, note="not selected"), []
    if frame is None:
        return SuiteOutcome(spec.name, "skipped", 0, note="no release given"
                            if spec.name.startswith("release") else "no data"), []
    if frame.empty and not spec.required:
        return SuiteOutcome(spec.name, "skipped", 0, note=f"table {spec.name} is empty"), []
    return validate_frame(context, source=source, spec=spec, frame=frame, params=params)


def read_questions_jsonl(path: Path) -> list[Any]:
    """The decoded objects of a release's ``questions.jsonl`` (blank lines skipped).

    Values are returned as decoded, even when they are not objects: the release suite names
    such records instead of this reader refusing the whole file.

    Raises:
        QualityError: the file is missing, not UTF-8, or a line is not JSON (line named).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QualityError(f"{path}: questions file not found") from None
    except UnicodeDecodeError as err:
        raise QualityError(f"{path}: not UTF-8 ({err.reason} at byte {err.start})") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise QualityError(f"{path}: line {number} is not JSON ({err.msg})") from None
    return records


def read_release(
    root: Path, *, video_families: Collection[str], day: dt.date,
    required_scopes: Sequence[str],
) -> ReleaseInputs:
    """Read a release folder's ``questions.jsonl`` and ``sources.json`` for the gate.

    Raises:
        QualityError: either file is missing, not UTF-8 or not JSON, or ``sources.json`` is
            not a JSON list.
    """
    questions = read_questions_jsonl(root / "questions.jsonl")
    path = root / "sources.json"
    try:
        sources = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise QualityError(f"{path}: sources file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise QualityError(f"{path}: not a JSON document ({err})") from None
    if not isinstance(sources, list):
        raise QualityError(f"{path}: must hold a JSON list of sources, not "
                           f"{type(sources).__name__}")
    return ReleaseInputs(questions=questions, sources=sources, root=root,
                         video_families=frozenset(video_families), day=day,
                         required_scopes=tuple(required_scopes))
