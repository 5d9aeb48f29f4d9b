"""Prefect flow: build one release from a finished store, gated, with its artifacts in the UI.

The same stage function as ``needleforge release``
(:func:`needleforge.stages.release.release_store`: every GX suite runs on the finished release
before it is moved into place), run as a flow so the release leaves what a refresh leaves in
the Prefect UI: a ``release-summary`` markdown artifact (questions, montages and videos by
bucket, what changed), the gate's table (``quality-gate``) and links to the card and the Data
Docs. The previous release for the
changelog is the one built last under ``--out`` unless ``--previous`` names one.
Run: ``python -m flows.release NAME --db data/db/expand.duckdb --render data/render
[--vnbench data/vnbench] [--out releases] [--params params.yaml] [--human-verdicts FILE]``
from the repo root (``--db`` defaults to the CLI's store, as ``needleforge release`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow

from flows._cli import flow_parser, run_main
from flows._progress import run_progress
from needleforge.orchestration import artifacts
from needleforge.params import resolve_params
from needleforge.stages.release import earlier_releases, previous_release, release_store


@flow(name="release", log_prints=True)
def release_flow(
    name: str, db: Path, out: Path = Path("releases"), render_dir: Path | None = None,
    vnbench_dir: Path | None = None, previous: Path | None = None, overwrite: bool = False,
    params_path: Path | None = None, human_verdicts: Path | None = None,
) -> dict[str, Any]:
    """Build ``out/name`` from ``db`` and post its artifacts; returns what shipped.
    ``human_verdicts``: a verdict file (``reviews/human_verdicts.jsonl``) recorded into
    ``db`` first, as ``needleforge release --human-verdicts`` does.

    Raises:
        ReleaseError / QualityError: as :func:`needleforge.stages.release.release_store` (a failed
            gate leaves no release, and any older one of that name intact).
    """
    params = resolve_params(params_path)
    prev = previous or previous_release(out, name=name)
    with run_progress(f"release {name}", "build steps") as progress:
        report = release_store(
            db=db, name=name, out_root=out, render_dir=render_dir, params=params,
            previous=prev, vnbench_dir=vnbench_dir,
            earlier=earlier_releases(out, name=name), overwrite=overwrite,
            on_gate=artifacts.post_gate, on_step=progress, human_verdicts=human_verdicts,
            on_verdicts=lambda recorded: print(f"{human_verdicts} → {db}\n"
                                               f"{recorded.to_text()}"))
    reason = f"released {name}" + (f" (changelog against {prev.name})" if prev else "")
    artifacts.post(artifacts.RunSummary(f"Release {name}", reason, report,
                                        previous=prev.name if prev else None),
                   key="release-summary")
    print(report.summary())
    return {"released": name, "questions": report.n_questions,
            "montages": report.n_montages, "videos": report.n_videos,
            "manifest_sha256": report.manifest_sha256, **dict(report.changes)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__)
    parser.add_argument("name")
    parser.add_argument("--out", type=Path, default=Path("releases"))
    parser.add_argument("--render", type=Path, default=None)
    parser.add_argument("--vnbench", type=Path, default=None)
    parser.add_argument("--previous", type=Path, default=None)
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--human-verdicts", type=Path, default=None,
                        help="verdict file (JSONL) recorded into --db before building")
    run_main(parser, lambda a: release_flow(a.name, a.db, a.out, a.render, a.vnbench,
                                            a.previous, a.overwrite, a.params,
                                            a.human_verdicts), argv)


if __name__ == "__main__":
    main()
