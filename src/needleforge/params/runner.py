"""``runner:`` of ``params.yaml``: where the flows' tasks run."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section

_DASK_ADDRESS = r"^(tcp|tls|ucx|ws|wss|inproc)://[^\s/]+$"


class RunnerParams(_Section):
    """Where the flows' per-video and per-montage tasks run (``flows/``, ``--runner``).

    ``threads`` (default) runs tasks on ``workers`` threads of the flow process. ``dask``
    uses prefect-dask: ``dask_address`` (``tcp://host:8786``) names an existing cluster,
    None starts a local cluster of ``workers`` single-threaded worker processes. ``ray`` uses
    prefect-ray: ``ray_address`` (``ray://host:10001`` or ``auto``) names an existing
    cluster, None starts a local one with ``workers`` CPUs. Workers must see the media
    store, scene-clip cache and output folders at the same paths (a shared filesystem);
    only the flow process writes DuckDB (see docs/clusters.md). ``needleforge represent``
    also represents ``workers`` videos at once on threads.
    """

    kind: Literal["threads", "dask", "ray"] = "threads"
    workers: Annotated[int, Field(ge=1, le=256)] = 2
    dask_address: Annotated[str, Field(pattern=_DASK_ADDRESS)] | None = None
    ray_address: Annotated[
        str, Field(pattern=r"^(auto|(ray://)?[A-Za-z0-9_.\-\[\]:]+:[0-9]+)$")
    ] | None = None
