"""Prefect flow: NeMo stage 2 (questions, negatives, short montages, self-verification).

Two steps. First the negative check's scans (``nemo.check.negatives``, most of the stage's
cost): one task per video holding an object target, fanned out on the task runner of
``runner:`` in params (threads by default; Dask or Ray with ``--runner``); each worker builds
its own detector and returns scans, and the flow process stores each video's scans as it
arrives, so a killed run resumes with the videos not yet scanned. Then generation itself,
which reads the whole store and is deterministic: one task in the flow process
(:func:`needleforge.stages.nemo.generate_store`, the same code as ``needleforge nemo``), which
reuses the stored scans. The instance check (``nemo.check.instances``) runs there, not ahead:
it compares each object target with the negatives its montage draws, so its work depends on
the plans; its scans are stored too, and a rerun reuses them.
Run: ``python -m flows.generate [--db DB] [--params params.yaml]
[--runner dask --workers 2 | --address tcp://host:8786]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prefect import flow, task

from flows._cli import flow_parser, run_main, runner_of
from flows._progress import run_progress
from needleforge.backends import default_registry
from needleforge.nemo import build_backends, scan_scenes
from needleforge.orchestration.runners import default_task_runner, with_runner
from needleforge.params import NemoParams, Params, RunnerParams, resolve_params
from needleforge.records import SceneScan
from needleforge.runtime.preflight import check_nemo
from needleforge.stages.nemo import (
    GenerateOutcome,
    ScanJob,
    generate_store,
    record_scans,
    scan_jobs,
)


@task(name="negative-scan")
def scan_task(job: ScanJob, params: NemoParams) -> list[SceneScan]:
    return scan_scenes(params, video=job.video, scenes=job.scenes, registry=default_registry())


@task(name="nemo-generate")
def generate_task(db: Path, params: Params) -> GenerateOutcome:
    with run_progress("nemo", "target steps (plan, verdict)") as report:
        return generate_store(db=db, params=params, on_step=report)


@flow(name="generate", log_prints=True, task_runner=default_task_runner())
def generate_flow(db: Path, params_path: Path | None = None) -> dict[str, int]:
    """Scan negatives per video, then generate short NeMo montages and questions into
    ``db``; returns counts."""
    params = resolve_params(params_path)
    # Before the scans, which take most of the stage: the checks `needleforge nemo` makes
    # first (a dead server or a wrong model id, a missing model folder: the CLI's message),
    # then the describer and verifier built once (an unknown name, bad options) and dropped;
    # the generate task builds its own.
    check_nemo(params.nemo)
    build_backends(params.nemo, registry=default_registry())
    jobs = scan_jobs(db=db, params=params)
    futures = [scan_task.submit(job, params.nemo) for job in jobs]
    scanned = 0
    with run_progress("negative-scan", "videos") as report:
        for done, future in enumerate(futures, start=1):
            scanned += record_scans(db=db, scans=future.result())
            report(done, len(futures))
    print(f"negative check: {scanned} scene(s) scanned in {len(jobs)} video task(s)")
    result = generate_task(db, params).result
    counts = {"montages": len(result.montages), "questions": len(result.questions),
              "passed": len(result.releasable()), "skipped": len(result.skipped),
              "negatives_passed_over": len(result.rejected_negatives),
              "scenes_scanned": scanned}
    print(f"generated {counts}")
    return counts


def run_generate(db: Path, params_path: Path | None = None, *,
                 runner: RunnerParams | None = None) -> dict[str, int]:
    """:func:`generate_flow` on the task runner ``runner`` describes (default: the params
    file's ``runner:`` section).

    Raises:
        ConfigError: the runner's package is missing or its cluster address is unreachable.
    """
    settings = runner or resolve_params(params_path).runner
    return with_runner(generate_flow, settings)(db, params_path)


def main(argv: Sequence[str] | None = None) -> None:
    run_main(flow_parser(__doc__, runner=True),
             lambda a: run_generate(a.db, a.params, runner=runner_of(a)), argv)


if __name__ == "__main__":
    main()
