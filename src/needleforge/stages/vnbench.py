"""The vnbench stage: a VideoNIAH / VNBench set built, rendered and exported from the
store's videos.
"""

from __future__ import annotations

from pathlib import Path

from needleforge.params import Params
from needleforge.runtime.progress import OnCount
from needleforge.store import Store
from needleforge.vnbench.records import VNBenchResult


def vnbench_store(*, db: Path, out: Path, cache_dir: Path | None, params: Params,
                  on_step: OnCount | None = None) -> VNBenchResult:
    """Build, render and export a VNBench set from ``db``'s videos into ``out``.
    ``on_step(done, total)``: each haystack screened and each sample rendered
    (:func:`~needleforge.vnbench.build_vnbench`).

    Writes ``out/<sample>.mp4`` (+ sidecars), ``out/questions.jsonl`` (scorer records, 4
    rotations per sample) and ``out/vnbench.json`` (VNBench-style).

    Raises:
        StoreError: ``db`` is not a usable store. BackendError: an unknown embedder.
        VNBenchError / MediaError: an asset or a sample cannot be built.
    """
    from needleforge.backends import default_registry
    from needleforge.vnbench import build_vnbench
    from needleforge.vnbench.export import write_jsonl, write_vnbench_json

    embedder = default_registry().create("image_embedder", params.vnbench.embedder,
                                         **params.vnbench.embedder_options)
    with Store(db, read_only=True) as store:
        videos = store.videos()
    result = build_vnbench(videos=videos, params=params.vnbench, out_dir=out,
                           cache_dir=cache_dir or out / ".cache", render=params.render,
                           embedder=embedder, on_step=on_step)
    write_jsonl(result.questions, path=out / "questions.jsonl")
    write_vnbench_json(result.vnbench_json, path=out / "vnbench.json")
    return result
