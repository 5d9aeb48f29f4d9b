"""Task runners from the ``runner:`` params section: kinds, overrides and clear errors.

Bad inputs tried here: an unknown kind, zero workers, a malformed Dask address, an address for
the threads runner, an unknown key in the section, an address nothing listens on, a ``host``
with no port, and a runner whose optional package cannot be imported.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Iterator

import pytest
from prefect.task_runners import ThreadPoolTaskRunner

from needleforge.errors import ConfigError
from needleforge.orchestration.runners import (
    add_runner_arguments,
    check_reachable,
    make_task_runner,
    runner_from_args,
    runner_params,
)
from needleforge.params import ParamsError, RunnerParams, parse_params


@pytest.fixture
def listening() -> Iterator[str]:
    """A TCP port on localhost that accepts connections (stands in for a scheduler)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_defaults_and_section_validation() -> None:
    assert parse_params({}).runner == RunnerParams(kind="threads", workers=2)
    params = parse_params({"runner": {"kind": "dask", "dask_address": "tcp://sched:8786"}})
    assert params.runner.dask_address == "tcp://sched:8786"
    with pytest.raises(ParamsError, match=r"runner\.kind.*'spark'"):
        parse_params({"runner": {"kind": "spark"}})
    with pytest.raises(ParamsError, match=r"unknown key 'runner\.adress'"):
        parse_params({"runner": {"adress": "tcp://x:1"}})
    with pytest.raises(ParamsError, match=r"runner\.dask_address"):
        parse_params({"runner": {"dask_address": "sched:8786"}})  # no scheme


def test_threads_runner_has_the_workers() -> None:
    runner = make_task_runner(RunnerParams(workers=3))
    assert isinstance(runner, ThreadPoolTaskRunner) and runner._max_workers == 3


def test_overrides_are_validated() -> None:
    base = RunnerParams()
    assert runner_params(base, kind="dask", workers=4, address="tcp://h:8786") == RunnerParams(
        kind="dask", workers=4, dask_address="tcp://h:8786")
    assert runner_params(base, kind="ray", address="auto").ray_address == "auto"
    with pytest.raises(ConfigError, match=r"kind.*'spark'"):
        runner_params(base, kind="spark")
    with pytest.raises(ConfigError, match=r"workers.*0"):
        runner_params(base, workers=0)
    with pytest.raises(ConfigError, match=r"'tcp://h:1'.*threads"):
        runner_params(base, address="tcp://h:1")


def test_cli_arguments_override_the_section() -> None:
    parser = argparse.ArgumentParser()
    add_runner_arguments(parser)
    args = parser.parse_args(["--runner", "dask", "--workers", "1"])
    assert runner_from_args(RunnerParams(workers=5), args) == RunnerParams(kind="dask", workers=1)
    assert runner_from_args(RunnerParams(workers=5), parser.parse_args([])).workers == 5


def test_dask_runners() -> None:
    prefect_dask = pytest.importorskip("prefect_dask")
    local = make_task_runner(RunnerParams(kind="dask", workers=2))
    assert isinstance(local, prefect_dask.DaskTaskRunner) and local.address is None
    assert local.cluster_kwargs["n_workers"] == 2
    assert local.cluster_kwargs["threads_per_worker"] == 1


def test_dask_address_reachable_and_not(listening: str) -> None:
    prefect_dask = pytest.importorskip("prefect_dask")
    remote = make_task_runner(RunnerParams(kind="dask", dask_address=listening))
    assert isinstance(remote, prefect_dask.DaskTaskRunner) and remote.address == listening
    dead = f"tcp://127.0.0.1:{_closed_port()}"
    with pytest.raises(ConfigError, match=rf"runner\.dask_address = '{dead}'.*cannot reach"):
        make_task_runner(RunnerParams(kind="dask", dask_address=dead))


def test_check_reachable_needs_a_port() -> None:
    with pytest.raises(ConfigError, match=r"'sched'.*host:port"):
        check_reachable("sched", what="address")
    port = _closed_port()
    with pytest.raises(ConfigError, match=rf"ray://127\.0\.0\.1:{port}"):
        check_reachable(f"ray://127.0.0.1:{port}", what="runner.ray_address")


def test_missing_optional_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail as if the package were absent.
    monkeypatch.setitem(sys.modules, "prefect_ray", None)
    with pytest.raises(ConfigError,
                       match=r"'ray' needs the prefect-ray package.*needleforge\[ray\]"):
        make_task_runner(RunnerParams(kind="ray"))
