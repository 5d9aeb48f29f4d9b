"""Prefect flow: the scheduled refresh, from newly authorized sources to a new release.

ingest (known videos are skipped) → represent (current videos are skipped) → NeMo generate →
expand → render → validate (the gate fails the run) → release, with a changelog against the
previous release → optionally publish (DVC track, git commit + tag, DVC push). Ingest,
represent, generate and render run as the existing subflows on the task runner of
``runner:`` in params (generate fans out its negative scans); the other stages are tasks
over :mod:`needleforge.pipeline`. Every earlier release under the releases folder is passed
as ``earlier``, so sources they used are flagged (and dropped with
``release.exclude_contaminated``). VNBench is not part of the refresh: its haystacks are
drawn from the whole corpus, so a new video would reshuffle every sample; build it with
``needleforge vnbench`` and a release from the CLI when wanted. Schedule: ``prefect.yaml``.
Run once: ``python -m flows.refresh MANIFEST --db data/needleforge.duckdb [--name NAME]``
(``-m`` from the repo root: it imports the sibling flows); serve on a cron schedule with
``--serve "0 3 * * 1"`` (needs a Prefect server), or deploy ``prefect.yaml``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from prefect import flow, task

from flows.generate import generate_flow
from flows.ingest import ingest_flow
from flows.render import render_flow
from flows.represent import represent_flow
from needleforge import pipeline
from needleforge.config import load_params
from needleforge.release import publish
from needleforge.runners import with_runner

expand_task = task(name="expand")(pipeline.expand_store)
validate_task = task(name="validate")(pipeline.validate_store)
release_task = task(name="release")(pipeline.release_store)
publish_task = task(name="publish")(publish)


@flow(name="refresh", log_prints=True)
def refresh_flow(
    manifest: Path, db: Path, releases: Path = Path("releases"), name: str | None = None,
    params_path: Path | None = None, previous: Path | None = None,
    publish_repo: Path | None = None, remote: str | None = None,
) -> dict[str, int]:
    """Refresh ``db`` from ``manifest`` and build ``releases/<name>``; returns counts.

    ``name`` defaults to the UTC time (``2026.11.29-0300``); ``previous`` to the release whose
    name sorts last under ``releases``. With ``publish_repo`` the release is tagged ``name``.
    """
    params = load_params(params_path)
    name = name or dt.datetime.now(dt.UTC).strftime("%Y.%m.%d-%H%M")
    work = db.parent
    ingested = with_runner(ingest_flow, params.runner)(manifest, db, params_path=params_path)
    represented = with_runner(represent_flow, params.runner)(db, params_path)
    generated = with_runner(generate_flow, params.runner)(db, params_path)
    expanded = expand_task(db=db, params=params)
    with_runner(render_flow, params.runner)(db, work / "render", None, params_path,
                                            params.runner.workers)
    validate_task(db=db, out=work / "quality", params=params)
    prev = previous or pipeline.previous_release(releases, name=name)
    report = release_task(
        db=db, name=name, out_root=releases, render_dir=work / "render", params=params,
        previous=prev, earlier=pipeline.earlier_releases(releases, name=name))
    if publish_repo is not None:
        publish_task(report.path, repo=publish_repo, tag=name, remote=remote)
    print(f"release {report.path}: {report.n_questions} question(s); changes {report.changes}")
    return {"new_videos": ingested["new_videos"], "represented": represented["represented"],
            "represent_skipped": represented["skipped"], "short_questions":
            generated["questions"], "expanded_questions": len(expanded.questions),
            "released_questions": report.n_questions,
            **{k: int(report.changes[k]) for k in ("added", "removed", "changed")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--releases", type=Path, default=Path("releases"))
    parser.add_argument("--name", default=None)
    parser.add_argument("--params", type=Path, default=None)
    parser.add_argument("--previous", type=Path, default=None)
    parser.add_argument("--publish-repo", type=Path, default=None)
    parser.add_argument("--remote", default=None)
    parser.add_argument("--serve", metavar="CRON", default=None,
                        help="serve the flow on this cron schedule instead of running once")
    args = parser.parse_args()
    if args.serve:
        refresh_flow.serve(name="scheduled-refresh", cron=args.serve, parameters={
            "manifest": str(args.manifest), "db": str(args.db),
            "releases": str(args.releases), "params_path": args.params and str(args.params),
            "publish_repo": args.publish_repo and str(args.publish_repo),
            "remote": args.remote})
        return
    refresh_flow(args.manifest, args.db, args.releases, args.name, args.params, args.previous,
                 args.publish_repo, args.remote)


if __name__ == "__main__":
    main()
