"""The flows' progress: a stage's counts as the run's log lines and a ``<stage>-progress``
artifact that follows them; outside a run, the same lines on stderr as the CLI writes."""

from __future__ import annotations

import threading

import pytest

import needleforge.runtime.progress as progress
from flows._progress import run_progress


@pytest.fixture(autouse=True)
def _every_count_due(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.0)


def test_outside_a_run_the_counts_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with run_progress("expand", "montage groups") as report:
        report(1, 2)
        report(2, 2)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("expand: 1/2 montage groups, ")
    assert lines[-1].startswith("expand: done, 2/2 montage groups in ")


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_a_task_sends_its_counts_to_a_progress_artifact_from_any_thread() -> None:
    from prefect import flow, task
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    @task
    def count_task() -> None:
        with run_progress("Demo stage", "items") as report:
            report(1, 4)
            report(2, 4)
            # a worker thread, with no Prefect run context of its own
            worker = threading.Thread(target=report, args=(3, 4))
            worker.start()
            worker.join()
            report(4, 4)

    @flow
    def counting_flow() -> None:
        count_task()

    counting_flow()
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["demo-stage-progress"])))
    assert len(found) == 1
    artifact = found[0]
    assert artifact.type == "progress" and float(artifact.data) == 100.0
    assert artifact.description is not None
    assert artifact.description.startswith("Demo stage: done, 4/4 items in ")
    assert artifact.task_run_id is not None
