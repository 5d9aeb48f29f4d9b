"""The validate stage: the Great Expectations quality gate over the store (and a release)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from needleforge.errors import StoreError
from needleforge.params import Params, QualityParams
from needleforge.quality import (
    GateResult,
    read_questions_jsonl,
    read_release,
    run_gate,
)
from needleforge.quality.dataframes import STORE_FRAMES, FrameQuery
from needleforge.runtime.progress import OnCount
from needleforge.store import Store

if TYPE_CHECKING:
    import pandas as pd


def run_checks(*, db: Path, out: Path, params: Params, questions: Path | None = None,
               release_dir: Path | None = None, on_step: OnCount | None = None) -> GateResult:
    """Run the quality gate on ``db`` (and a release) and return its verdict; never raises on
    a failing expectation.

    ``questions`` checks a bare ``questions.jsonl``; ``release_dir`` checks a whole release
    folder: its questions, videos and ``sources.json`` licences on the release day
    (``release.release_date``, else today) against ``release.required_scopes``. NeMo
    videos are required when the folder holds any montage video. ``on_step(done, total)``:
    the gate's steps (:func:`~needleforge.quality.gate.run_gate`).

    Raises:
        QualityError: the gate could not run or the release's files cannot be read.
        StoreError: ``db`` is not a usable store.
    """
    if release_dir is None:
        records = read_questions_jsonl(questions) if questions is not None else None
        return run_gate(tables=store_frames(db, params=params.quality),
                        release_questions=records, out_dir=out, params=params.quality,
                        on_step=on_step)
    families = frozenset({"vnbench"} | ({"nemo"} if _ships_nemo_videos(release_dir) else set()))
    return release_gate(db=db, root=release_dir, out=out, params=params, families=families,
                         on_step=on_step)


def _ships_nemo_videos(root: Path) -> bool:
    """Whether a release holds rendered montages: then every NeMo question's video must exist.

    Raises:
        QualityError: ``questions.jsonl`` cannot be read.
    """
    for r in read_questions_jsonl(root / "questions.jsonl"):
        if isinstance(r, dict) and r.get("family") == "nemo" and isinstance(r.get("video"), str) \
                and (root / r["video"]).is_file():
            return True
    return False


def release_gate(*, db: Path, root: Path, out: Path, params: Params,
                  families: frozenset[str], on_step: OnCount | None = None) -> GateResult:
    """The gate on ``db`` and the release folder ``root`` (the videos of ``families``
    required), its report written to ``out``; the release stage runs it before moving a
    release into place.

    Raises:
        QualityError: the release's files cannot be read or the gate could not run.
        StoreError: ``db`` is not a usable store.
    """
    inputs = read_release(root, video_families=families, day=params.release.check_day(),
                          required_scopes=params.release.required_scopes)
    return run_gate(tables=store_frames(db, params=params.quality), release_questions=None,
                    out_dir=out, params=params.quality, release=inputs, on_step=on_step)


def store_frames(db: Path, *, params: QualityParams) -> dict[str, pd.DataFrame]:
    """One DataFrame per store suite (empty when its table is), keyed by suite name
    (:data:`~needleforge.quality.dataframes.STORE_FRAMES`).

    The store is opened read-only: the gate never writes it.

    Raises:
        StoreError: ``db`` is missing, not a DuckDB store, at another schema version, or
            lacks a column its schema version promises.
    """
    sql_params: dict[str, Any] = {
        "check_day": params.today(), "scopes": list(params.required_scopes),
    }
    with Store(db, read_only=True) as store:
        return {q.suite: _frame(store, query=q, params=sql_params) for q in STORE_FRAMES}


def _frame(store: Store, *, query: FrameQuery, params: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    try:
        rows = store.query(query.select, [params[name] for name in query.binds])
    except duckdb.Error as err:  # a column the schema version promises is missing
        raise StoreError(f"{store.path}: cannot read the {query.suite} table for the quality "
                         f"gate; the store does not match schema version "
                         f"{store.schema_version} ({err})") from None
    return pd.DataFrame.from_records(rows, columns=list(query.columns))
