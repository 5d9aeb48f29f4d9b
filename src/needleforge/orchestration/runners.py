"""Prefect task runners chosen by the ``runner:`` section of ``params.yaml`` (or ``--runner``).

The flows fan per-video and per-montage work out as tasks; *where* those tasks run is a
deployment choice, not code: threads of the flow process (the default), a Dask cluster
(prefect-dask: a local one started for the run, or an existing scheduler's address) or a Ray
cluster (prefect-ray). Whatever the runner, task results come back to the flow process,
which alone writes DuckDB; workers read media and write files (scene clips, montages) under
paths they must see the same way as the flow process (a shared filesystem).

prefect-dask and prefect-ray are optional extras: they are imported only when chosen, and a
missing one is a :class:`~needleforge.errors.ConfigError` that says what to install. An
address is checked with a TCP connect before the flow starts, so an unreachable cluster fails
in seconds with the address named rather than after the client's long connect timeout.

This module also owns the task runner every flow is declared with
(:func:`default_task_runner`). Prefect is imported only when a runner is made.
"""

from __future__ import annotations

import argparse
import importlib
import re
import socket
from typing import TYPE_CHECKING, Any, TypeVar

from needleforge.errors import ConfigError
from needleforge.params import RunnerParams

if TYPE_CHECKING:
    from prefect.task_runners import TaskRunner

#: Seconds a reachability check waits for a TCP connection to a cluster address.
CONNECT_TIMEOUT_S = 3.0
#: Ray's default client port, used when a ``ray://host`` address gives none.
_RAY_CLIENT_PORT = 10001
_HOST_PORT = re.compile(r"^(?:[a-z]+://)?\[?(?P<host>[^\]/]+?)\]?:(?P<port>\d+)$")

_F = TypeVar("_F")


def runner_params(
    base: RunnerParams,
    *,
    kind: str | None = None,
    workers: int | None = None,
    address: str | None = None,
) -> RunnerParams:
    """``base`` with command-line overrides applied and validated again.

    ``address`` goes to ``dask_address`` or ``ray_address`` according to the resulting kind.

    Raises:
        ConfigError: an override is invalid (an unknown kind, workers < 1, a malformed
            address, an address for the threads runner); the message names it and the
            allowed values.
    """
    from pydantic import ValidationError

    data = base.model_dump()
    if kind is not None:
        data["kind"] = kind
    if workers is not None:
        data["workers"] = workers
    if address is not None:
        if data["kind"] == "threads":
            raise ConfigError(f"runner address {address!r} given, but the runner kind is "
                              "'threads' (choose --runner dask or --runner ray)")
        data[f"{data['kind']}_address"] = address
    try:
        return RunnerParams.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e.get('input')!r})"
            for e in err.errors())
        raise ConfigError(f"runner: invalid settings: {problems}") from None


def make_task_runner(params: RunnerParams) -> TaskRunner[Any]:
    """A fresh Prefect task runner for ``params`` (one per flow run: runners hold a pool).

    Raises:
        ConfigError: the optional package of the chosen kind is not installed, or the
            cluster address cannot be reached (host and port named).
    """
    if params.kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        runner: TaskRunner[Any] = ThreadPoolTaskRunner(max_workers=params.workers)
        return runner
    if params.kind == "dask":
        module = _optional("prefect_dask", kind="dask", package="prefect-dask")
        if params.dask_address is not None:
            check_reachable(params.dask_address, what="runner.dask_address")
            dask_runner: TaskRunner[Any] = module.DaskTaskRunner(address=params.dask_address)
            return dask_runner
        # Single-threaded worker processes: our tasks hold model backends that are not
        # thread-safe and run ffmpeg children; no dashboard (no port to clash with).
        cluster = {"n_workers": params.workers, "threads_per_worker": 1, "processes": True,
                   "dashboard_address": None}
        local_dask: TaskRunner[Any] = module.DaskTaskRunner(cluster_kwargs=cluster)
        return local_dask
    module = _optional("prefect_ray", kind="ray", package="prefect-ray")
    if params.ray_address is not None:
        if params.ray_address != "auto":
            check_reachable(params.ray_address, what="runner.ray_address",
                            default_port=_RAY_CLIENT_PORT)
        ray_runner: TaskRunner[Any] = module.RayTaskRunner(address=params.ray_address)
        return ray_runner
    local_ray: TaskRunner[Any] = module.RayTaskRunner(
        init_kwargs={"num_cpus": params.workers, "include_dashboard": False})
    return local_ray


def default_task_runner() -> TaskRunner[Any]:
    """The task runner a flow is declared with: the one the default ``runner:`` section
    describes (threads, ``RunnerParams().workers`` of them: one per core of the 2-core
    machines we target; each task already uses threads inside ffmpeg, cv2 or a model).

    It runs a flow called as is (a test, a deployment's subflow); ``run_*`` and ``main`` swap
    it for the params file's runner with :func:`with_runner`. A fresh one per flow: runners
    hold a pool.
    """
    return make_task_runner(RunnerParams())


def with_runner(flow: _F, params: RunnerParams) -> _F:
    """``flow`` with its task runner replaced by the one ``params`` describe.

    Prefect binds a flow's task runner when the flow is defined; ``with_options`` returns a
    copy bound to another one, so the flows stay importable without any cluster package.

    Raises:
        ConfigError: see :func:`make_task_runner`.
    """
    runner = make_task_runner(params)
    copy: _F = flow.with_options(task_runner=runner)  # type: ignore[attr-defined]
    return copy


def check_reachable(address: str, *, what: str, default_port: int | None = None) -> None:
    """Fail fast when nothing listens at ``address`` (``scheme://host:port`` or ``host:port``).

    Raises:
        ConfigError: the address has no host and port, or a TCP connection to it fails
            within :data:`CONNECT_TIMEOUT_S`; the message names ``what`` and the address.
    """
    if address.startswith("inproc://"):
        return  # an in-process scheduler: nothing to connect to
    match = _HOST_PORT.match(address)
    if match is None and default_port is not None:
        match = _HOST_PORT.match(f"{address}:{default_port}")
    if match is None:
        raise ConfigError(f"{what} = {address!r}: expected scheme://host:port")
    host, port = match["host"], int(match["port"])
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise ConfigError(f"{what} = {address!r}: cannot reach {host}:{port} ({reason}); "
                          "is the cluster running and reachable from this machine?") from None


def _optional(module: str, *, kind: str, package: str) -> Any:
    """Import the optional runner package ``module``; a clear error when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(f"runner.kind = {kind!r} needs the {package} package, which is not "
                          f"installed ({err}); install it with: pip install 'needleforge[{kind}]'"
                          ) from None


def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--runner``, ``--workers`` and ``--address`` (``runner:`` overrides) to a CLI."""
    parser.add_argument("--runner", choices=["threads", "dask", "ray"], default=None,
                        help="task runner (default: runner.kind of the params file)")
    parser.add_argument("--workers", type=int, default=None,
                        help="threads, or local Dask workers / Ray CPUs (default: runner.workers)")
    parser.add_argument("--address", default=None,
                        help="address of an existing Dask (tcp://host:8786) or Ray cluster")


def runner_from_args(base: RunnerParams, args: argparse.Namespace) -> RunnerParams:
    """``base`` with the overrides parsed by :func:`add_runner_arguments`.

    Raises:
        ConfigError: see :func:`runner_params`.
    """
    return runner_params(base, kind=args.runner, workers=args.workers, address=args.address)
