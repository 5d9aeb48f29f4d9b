"""Run one code-defined suite over one DataFrame in a GX context; name what failed.

GX 1.x objects used per suite: the suite is added to the context's expectations store
(``context.suites.add``), the DataFrame becomes a pandas data asset with a whole-DataFrame
batch definition, and a ``ValidationDefinition`` ties the two together and runs with
``batch_parameters={"dataframe": frame}``; its result lands in the validation results store,
from which ``context.build_data_docs()`` renders the report. (A ``Checkpoint`` would add
nothing here: its batch parameters are shared by all its validation definitions, and every
suite has its own DataFrame.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import great_expectations as gx

from needleforge.quality.results import CheckOutcome, Failure, SuiteOutcome

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.core.expectation_validation_result import (
        ExpectationSuiteValidationResult,
        ExpectationValidationResult,
    )
    from great_expectations.data_context.data_context.file_data_context import (
        FileDataContext,
    )
    from great_expectations.datasource.fluent.pandas_datasource import PandasDatasource

    from needleforge.params import QualityParams
    from needleforge.quality.suites import SuiteSpec

DATASOURCE = "needleforge"
_BATCH = "whole"


def add_datasource(context: FileDataContext) -> PandasDatasource:
    """The pandas data source every suite's DataFrame asset hangs off."""
    source: PandasDatasource = context.data_sources.add_pandas(DATASOURCE)
    return source


def validate_frame(
    context: FileDataContext,
    *,
    source: PandasDatasource,
    spec: SuiteSpec,
    frame: pd.DataFrame,
    params: QualityParams,
) -> tuple[SuiteOutcome, list[Failure]]:
    """Validate ``frame`` against the suite ``spec`` builds; return its outcome and failures.

    Raises:
        great_expectations.exceptions.GreatExpectationsError: GX could not store the suite or
            run the validation (a failing *expectation* is a Failure, never an exception).
    """
    suite = context.suites.add(spec.build(params))
    batch = source.add_dataframe_asset(name=spec.name).add_batch_definition_whole_dataframe(
        _BATCH)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=spec.name, data=batch, suite=suite))
    result_format = {
        "result_format": "SUMMARY",
        "partial_unexpected_count": params.max_examples,
        "unexpected_index_column_names": list(spec.id_columns),
    }
    run: ExpectationSuiteValidationResult = definition.run(
        batch_parameters={"dataframe": frame}, result_format=result_format)
    failures = [_failure(r, spec=spec, limit=params.max_examples) for r in run.results
                if not r.success]
    failures.sort(key=lambda f: f.check)
    outcome = SuiteOutcome(
        suite=spec.name, status="failed" if failures else "passed", n_rows=len(frame),
        n_expectations=len(run.results), n_failed=len(failures),
        checks=tuple(_check(r, limit=params.max_examples) for r in run.results))
    return outcome, failures


#: A passing aggregate value this close to a bound (relative, at least 1 unit) is borderline.
BORDERLINE_MARGIN = 0.05


def _check(result: ExpectationValidationResult, *, limit: int) -> CheckOutcome:
    """One evaluated expectation for the report: its observed value against its bounds."""
    config = result.expectation_config
    if config is None:
        return CheckOutcome("unknown", "unknown", None, bool(result.success), "")
    kwargs: Mapping[str, Any] = config.kwargs
    meta: Mapping[str, Any] = config.meta or {}
    info: Mapping[str, Any] = result.result or {}
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    bounds = " ".join(part for part in (
        f">= {low}" if low is not None else "", f"<= {high}" if high is not None else "")
        if part)
    observed = _plain(info.get("observed_value"))
    borderline = bool(result.success) and isinstance(observed, int | float) and any(
        isinstance(b, int | float) and abs(observed - b) <= BORDERLINE_MARGIN * max(abs(b), 1)
        for b in (low, high))
    if not result.success:
        shown = _observed(info, limit=limit)
    elif "observed_value" in info:
        shown = repr(observed)
    elif "unexpected_count" in info:
        shown = f"{info['unexpected_count']} of {info.get('element_count')} rows unexpected"
    else:
        shown = ""
    return CheckOutcome(
        check=str(meta.get("check", config.type)), expectation=config.type,
        column=kwargs.get("column") or _pair(kwargs), success=bool(result.success),
        observed=shown, bounds=bounds, borderline=borderline)


def _failure(result: ExpectationValidationResult, *, spec: SuiteSpec, limit: int) -> Failure:
    config = result.expectation_config
    if config is None:  # GX always sets it for suite results; guard the Optional type
        return Failure(spec.name, "unknown", None, "no expectation config", "")
    kwargs: Mapping[str, Any] = config.kwargs
    meta: Mapping[str, Any] = config.meta or {}
    column = kwargs.get("column") or _pair(kwargs)
    notes = config.notes or ""
    why = notes if isinstance(notes, str) else " ".join(notes)
    error = _error_message(result.exception_info)
    if error is not None:
        return Failure(spec.name, config.type, column, "error", f"{why} GX error: {error}",
                       check=str(meta.get("check", "")))
    info: Mapping[str, Any] = result.result or {}
    rows = _rows(info.get("partial_unexpected_index_list") or [], id_columns=spec.id_columns,
                 limit=limit)
    details = f"{why} Offending rows: {rows}." if rows else why
    return Failure(spec.name, config.type, column, _observed(info, limit=limit), details,
                   check=str(meta.get("check", "")))


def _pair(kwargs: Mapping[str, Any]) -> str | None:
    if "column_A" in kwargs:
        return f"{kwargs['column_A']}, {kwargs['column_B']}"
    return None


def _error_message(info: Any) -> str | None:
    """The exception GX caught while computing a metric, if any (it nests them by metric)."""
    if not isinstance(info, Mapping):
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message"))
    for nested in info.values():
        if isinstance(nested, Mapping) and nested.get("raised_exception"):
            return str(nested.get("exception_message"))
    return None


def _plain(value: Any) -> Any:
    """numpy scalars → Python numbers, so messages read ``-0.5`` not ``np.float64(-0.5)``."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _observed(info: Mapping[str, Any], *, limit: int) -> str:
    if "observed_value" in info:
        return repr(_plain(info["observed_value"]))
    values = [_plain(v) for v in info.get("partial_unexpected_list") or []][:limit]
    count, total = info.get("unexpected_count"), info.get("element_count")
    return f"{count} of {total} rows unexpected, e.g. {values!r}"


def _rows(index_list: Iterable[Any], *, id_columns: tuple[str, ...], limit: int) -> str:
    named = []
    for row in list(index_list)[:limit]:
        if isinstance(row, Mapping):
            named.append(", ".join(f"{c}={_plain(row.get(c))!r}" for c in id_columns))
        else:
            named.append(f"index {row!r}")
    return "; ".join(named)
