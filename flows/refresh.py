"""Prefect flow: the scheduled refresh, from newly authorized sources to a new release.

checks (manifest, params, release name, publish target: before any work) → store lock →
ingest (known videos are skipped) → nothing new? stop → represent (current videos are
skipped) → nothing new succeeded? stop → NeMo generate → expand → render → release, gated by
every GX suite, with a changelog against the release built last → optionally publish (DVC
track, push and verify, git commit + tag). What to release, and when a run fails, is decided
in :mod:`needleforge.stages.refresh`: with no new source and unchanged params and code nothing is
released and the run succeeds; when new sources were all refused or failed, nothing is
released and the run fails naming them; otherwise the release lists what failed in its
changelog and card. Every run leaves a summary artifact in the Prefect UI (plus the gate's
table and links to the card and Data Docs when it released). VNBench is not part of the
refresh (its haystacks are drawn from the whole corpus; build it with the CLI).
Run once: ``python -m flows.refresh MANIFEST [--db DB] [--params params.yaml] [--name NAME]
[--force] [--human-verdicts reviews/human_verdicts.jsonl]`` (``-m`` from the repo root: it
imports the sibling flows); serve on a cron schedule with ``--serve "0 3 * * 1"`` (needs a
Prefect server), or deploy ``prefect.yaml``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows._cli import flow_parser, run_main
from flows._progress import run_progress
from flows.generate import generate_flow
from flows.ingest import ingest_flow
from flows.render import render_flow
from flows.represent import represent_flow
from needleforge.nemo import ExpansionResult
from needleforge.orchestration import artifacts
from needleforge.orchestration.runners import with_runner
from needleforge.params import DEFAULT_DB, Params
from needleforge.quality import GateResult, QualityError
from needleforge.records.failures import StageFailure
from needleforge.release import ReleaseReport
from needleforge.release.history import Fingerprint
from needleforge.release.publish import publish_again_hint
from needleforge.stages.expand import expand_store
from needleforge.stages.refresh import (
    RefreshPlan,
    decide,
    failure_error,
    known_videos,
    preflight,
    previous_build,
    represent_failures,
    store_lock,
)
from needleforge.stages.release import earlier_releases, release_store

publish_task = task(name="publish")(publish_again_hint)


@task(name="expand")
def expand_task(db: Path, params: Params) -> ExpansionResult:
    with run_progress("expand", "montage groups") as report:
        return expand_store(db=db, params=params, on_group=report)


@task(name="release")
def release_task(
    *, db: Path, name: str, out_root: Path, render_dir: Path, params: Params,
    previous: Path | None, earlier: Sequence[Path], on_gate: Callable[[GateResult], None],
    failures: Sequence[StageFailure], inputs: Fingerprint, human_verdicts: Path | None,
) -> ReleaseReport:
    with run_progress(f"release {name}", "build steps") as report:
        return release_store(
            db=db, name=name, out_root=out_root, render_dir=render_dir, params=params,
            previous=previous, earlier=earlier, on_gate=on_gate, failures=failures,
            inputs=inputs, on_step=report, human_verdicts=human_verdicts,
            on_verdicts=lambda recorded: print(f"{human_verdicts} → {db}\n"
                                               f"{recorded.to_text()}"))
def _refresh(plan: RefreshPlan, previous: Path | None) -> tuple[artifacts.RunSummary,
                                                                 dict[str, int]]:
    runner, title = plan.params.runner, f"Refresh {plan.name}"
    known = known_videos(plan.db)
    ingested = with_runner(ingest_flow, runner)(plan.manifest, plan.db,
                                                params_path=plan.params_path)
    failures = [StageFailure.from_dict(d) for d in ingested["failures"]]
    counts = {"new_videos": ingested["new_videos"]}
    last = previous_build(plan, previous)
    verdict = decide(plan, previous=last, failures=failures)
    if verdict.go:
        represented = with_runner(represent_flow, runner)(plan.db, plan.params_path)
        failures += represent_failures(represented, known=known)
        counts |= {"represented": represented["represented"],
                   "represent_skipped": represented["skipped"]}
        verdict = decide(plan, previous=last, failures=failures,
                         failed_videos=represented["failed_videos"])
    if not verdict.go:
        return artifacts.RunSummary(title, verdict.reason, None, tuple(failures),
                                    verdict.previous, verdict.failed), counts
    generated = with_runner(generate_flow, runner)(plan.db, plan.params_path)
    expanded = expand_task(db=plan.db, params=plan.params)
    render_dir = plan.db.parent / "render"
    with_runner(render_flow, runner)(plan.db, render_dir, None, plan.params_path,
                                     runner.workers)
    try:
        report = release_task(
            db=plan.db, name=plan.name, out_root=plan.releases, render_dir=render_dir,
            params=plan.params, previous=last.path if last is not None else None,
            earlier=earlier_releases(plan.releases, name=plan.name),
            on_gate=artifacts.post_gate, failures=failures, inputs=verdict.inputs,
            human_verdicts=plan.human_verdicts)
    except QualityError as err:
        artifacts.post(artifacts.RunSummary(title, f"nothing released: {err}", None,
                                            tuple(failures), verdict.previous, failed=True),
                       key="refresh-summary")
        raise
    counts |= {"short_questions": generated["questions"],
               "expanded_questions": len(expanded.questions),
               "released_questions": report.n_questions,
               **{k: int(report.changes[k]) for k in ("added", "removed", "changed")}}
    return artifacts.RunSummary(title, f"released {plan.name} ({verdict.reason})", report,
                                tuple(failures), verdict.previous), counts


@flow(name="refresh", log_prints=True)
def refresh_flow(
    manifest: Path, db: Path = DEFAULT_DB,
    releases: Path = Path("releases"), name: str | None = None,
    params_path: Path | None = None, previous: Path | None = None,
    publish_repo: Path | None = None, remote: str | None = None, force: bool = False,
    human_verdicts: Path | None = None,
) -> dict[str, Any]:
    """Refresh ``db`` from ``manifest`` and build ``releases/<name>`` when something is new.

    ``name`` defaults to the UTC time (``2026.11.29-0300``); ``previous`` to the release
    built last; ``force`` releases even when nothing is new. With ``publish_repo`` the
    release is published and tagged ``name``. ``human_verdicts``: a verdict file
    (``reviews/human_verdicts.jsonl``) recorded into ``db`` before the release is built,
    checked before any work. Returns what happened (``released`` is None
    when nothing was); raises, after leaving its summary artifact, when nothing new succeeded.
    """
    plan = preflight(manifest=manifest, db=db, releases=releases, name=name,
                     params_path=params_path, publish_repo=publish_repo, remote=remote,
                     force=force, human_verdicts=human_verdicts)
    with store_lock(plan.db):
        summary, counts = _refresh(plan, previous)
    artifacts.post(summary, key="refresh-summary")
    print(f"{summary.reason}; {len(summary.failures)} source(s) failed")
    for failure in summary.failures:
        print(f"  failed {failure.to_text()}")
    if summary.failed:
        raise failure_error(summary.reason, summary.failures)
    tag = None
    if summary.release is not None and plan.publish_repo is not None:
        tag = publish_task(summary.release.path, repo=plan.publish_repo, tag=plan.name,
                           remote=plan.remote).tag
    return {"released": summary.release.name if summary.release else None,
            "reason": summary.reason, "previous": summary.previous, "published": tag,
            "failures": [f.to_text() for f in summary.failures], **counts}


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__)
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--releases", type=Path, default=Path("releases"))
    parser.add_argument("--name", default=None)
    parser.add_argument("--previous", type=Path, default=None)
    parser.add_argument("--publish-repo", type=Path, default=None)
    parser.add_argument("--remote", default=None)
    parser.add_argument("--force", action="store_true",
                        help="release even when nothing is new")
    parser.add_argument("--human-verdicts", type=Path, default=None,
                        help="verdict file (JSONL) recorded into the store before releasing")
    parser.add_argument("--serve", metavar="CRON", default=None,
                        help="serve the flow on this cron schedule instead of running once")
    run_main(parser, _serve_or_run, argv)


def _serve_or_run(args: argparse.Namespace) -> None:
    if args.serve:
        refresh_flow.serve(name="scheduled-refresh", cron=args.serve, parameters={
            "manifest": str(args.manifest), "db": str(args.db),
            "releases": str(args.releases), "params_path": args.params and str(args.params),
            "publish_repo": args.publish_repo and str(args.publish_repo),
            "remote": args.remote, "force": args.force,
            "human_verdicts": args.human_verdicts and str(args.human_verdicts)})
        return
    refresh_flow(args.manifest, args.db, args.releases, args.name, args.params, args.previous,
                 args.publish_repo, args.remote, args.force, args.human_verdicts)


if __name__ == "__main__":
    main()
