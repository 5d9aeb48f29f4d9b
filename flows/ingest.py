"""Prefect flow: authorized ingest of one manifest.

Planning (parse + authorize) runs once; each authorized row is probed, hashed and stored as
its own task, so a failing disk read retries alone; the flow process alone writes DuckDB.
Rows run on the task runner of ``runner:`` in params (``--runner`` overrides it); Dask or Ray
workers must see the manifest's files and the media store at the same paths.
Run: ``python -m flows.ingest MANIFEST [--db DB] [--params params.yaml] [--runner dask]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows._cli import flow_parser, run_main, runner_of
from needleforge.ingest import Accepted, RowJob, finish_ingest, plan_ingest, process_row
from needleforge.ingest.media_store import LinkMode
from needleforge.orchestration.runners import with_runner
from needleforge.params import resolve_params
from needleforge.records import IngestRejection
from needleforge.stages.ingest import record_ingest


@task(name="probe-hash-store", retries=2, retry_delay_seconds=1)
def process_row_task(
    job: RowJob, media_dir: Path, link_mode: LinkMode
) -> Accepted | IngestRejection:
    return process_row(job, media_dir=media_dir, link_mode=link_mode)


@flow(name="ingest", log_prints=True)
def ingest_flow(
    manifest: Path, db: Path, media_dir: Path | None = None, params_path: Path | None = None
) -> dict[str, Any]:
    """Ingest ``manifest`` into ``db``; returns counts of accepted, refused and new rows, and
    each refused row as a failure (:class:`~needleforge.records.failures.StageFailure` dicts;
    ``new`` is False for a refusal the store held already)."""
    params = resolve_params(params_path).ingest
    media = media_dir if media_dir is not None else db.parent / "media"
    planned = plan_ingest(manifest, params=params)
    futures = [
        process_row_task.submit(item, media, params.link_mode) if isinstance(item, RowJob)
        else item
        for item in planned
    ]
    outcome = record_ingest(db=db, result=finish_ingest(
        f if isinstance(f, IngestRejection) else f.result() for f in futures))
    for failure in outcome.failures:
        print(f"refused {failure.to_text()}")
    print(f"ingested {len(outcome.result.videos)} video(s), {outcome.new_videos} new")
    return {"videos": len(outcome.result.videos), "rejections": len(outcome.result.rejections),
            "new_videos": outcome.new_videos, "new_rejections": outcome.new_rejections,
            "failures": [f.to_dict() for f in outcome.failures]}


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__, runner=True)
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--media-dir", type=Path, default=None)
    run_main(parser, lambda a: with_runner(ingest_flow, runner_of(a))(
        a.manifest, a.db, a.media_dir, a.params), argv)


if __name__ == "__main__":
    main()
