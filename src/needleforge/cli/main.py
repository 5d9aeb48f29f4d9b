"""The ``needleforge`` command line: one thin command per pipeline stage.

Each command parses its arguments, loads ``params.yaml``, calls its stage function
(:mod:`needleforge.stages`: the one the Prefect flow and the DVC stage also call), which writes
the store in this process (the single writer), and prints a short report. Errors a user can
cause exit with status 2 and one clear message; the library text behind one goes to the debug
log (:mod:`needleforge.runtime.debug_log`), whose path the message then ends with. Commands
that build model backends check them first (:mod:`needleforge.runtime.preflight`), before
importing their stage module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from needleforge import __version__
from needleforge.cli.evaluate import evaluate, leaderboard, score
from needleforge.cli.release import publish, pull
from needleforge.cli.review import review
from needleforge.cli.support import (
    counts_table,
    print_reason_groups,
    rejection_table,
    user_errors,
)
from needleforge.params import DEFAULT_DB, PARAMS_HELP, Params, resolve_params
from needleforge.runtime.progress import StageProgress

if TYPE_CHECKING:
    from needleforge.stages.represent import Step

app = typer.Typer(
    name="needleforge",
    help="Build needle benchmarks for video-language models from authorized videos.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

ParamsOption = Annotated[
    Path | None, typer.Option("--params", help=PARAMS_HELP, dir_okay=False)]
DbOption = Annotated[Path, typer.Option("--db", help="DuckDB store.", dir_okay=False)]


#: One red line and exit 2 for a project error, its causes in the debug log (shared with the
#: commands of cli.release and cli.evaluate, so every command reports alike).
_user_errors = user_errors


def _params(path: Path | None) -> Params:
    """``--params`` read by the one rule of :func:`~needleforge.params.resolve_params`."""
    return resolve_params(path)


@app.command()
def version() -> None:
    """Print the needleforge version."""
    console.print(f"needleforge {__version__}")


@app.command()
@_user_errors
def studio(
    out: Annotated[Path, typer.Option("--out", help="Folder for the sample corpus.",
                                      file_okay=False)],
    params_path: ParamsOption = None,
) -> None:
    """Build the embedded sample corpus (real package clips + synthetic programs)."""
    from needleforge.stages.studio import studio_corpus

    params = _params(params_path)
    with console.status("rendering the sample corpus…"):
        report = studio_corpus(out=out, params=params)
    console.print(
        f"sample corpus in {report.out_dir}: {len(report.clip_paths)} real clip(s), "
        f"{len(report.video_paths)} synthetic video(s) ({report.n_scenes} scenes, "
        f"{report.n_objects} objects), {report.total_s:.0f} s in all; manifest "
        f"{report.manifest_path} ({len(report.refused)} row(s) refused by design)"
    )


@app.command()
@_user_errors
def ingest(
    manifest: Annotated[Path, typer.Argument(help="Manifest (.yaml/.yml/.csv).", dir_okay=False)],
    db: DbOption = DEFAULT_DB,
    media_dir: Annotated[
        Path | None,
        typer.Option("--media-dir", help="Content-addressed media store "
                     "(default: 'media' beside the DB).", file_okay=False),
    ] = None,
    params_path: ParamsOption = None,
) -> None:
    """Ingest the authorized sources of MANIFEST; refuse and report the others."""
    from needleforge.stages.ingest import ingest_store

    params = _params(params_path)
    media = media_dir if media_dir is not None else db.parent / "media"
    with console.status(f"probing and hashing the sources of {manifest}…"):
        outcome = ingest_store(manifest=manifest, db=db, media_dir=media, params=params)
    result = outcome.result
    console.print(
        f"ingested {len(result.videos)} video(s) ({outcome.new_videos} new), refused "
        f"{len(result.rejections)} row(s) ({outcome.new_rejections} new); store {db} now "
        f"holds {outcome.counts['videos']} video(s)"
    )
    if result.rejections:
        console.print(rejection_table(result.rejections))



def _represent(db: Path, params_path: Path | None, step: Step) -> None:
    from needleforge.runtime.preflight import check_objects

    params = _params(params_path)
    if step != "scenes":
        check_objects(params.objects)
    from needleforge.stages.represent import represent_store

    with StageProgress(step if step != "all" else "represent", "videos") as report:
        outcome = represent_store(db=db, params=params, step=step, on_video=report)
    counts = outcome.counts
    console.print(
        f"{step}: {outcome.represented} video(s) represented, {outcome.current} already "
        f"current, {len(outcome.failures)} failed; store holds {counts['scenes']} scenes, "
        f"{counts['scene_tags']} tags, {counts['objects']} objects"
    )
    for failure in outcome.failures:
        err_console.print(f"[bold red]failed:[/] {failure.video_id}: {failure.error}",
                          highlight=False, soft_wrap=True)
    if outcome.failures:
        raise typer.Exit(code=1)


@app.command()
@_user_errors
def scenes(db: DbOption = DEFAULT_DB, params_path: ParamsOption = None) -> None:
    """Cut every ingested video into scenes (PySceneDetect) with their subtitle text."""
    _represent(db, params_path, "scenes")


@app.command()
@_user_errors
def objects(db: DbOption = DEFAULT_DB, params_path: ParamsOption = None) -> None:
    """Tag, detect and track objects in the stored scenes (detecting scenes where missing)."""
    _represent(db, params_path, "objects")


@app.command()
@_user_errors
def represent(db: DbOption = DEFAULT_DB, params_path: ParamsOption = None) -> None:
    """Scenes, tags, objects and referring expressions for every ingested video."""
    _represent(db, params_path, "all")


@app.command()
@_user_errors
def nemo(db: DbOption = DEFAULT_DB, params_path: ParamsOption = None) -> None:
    """NeMo stage 2: targets, written questions, negatives, short montages, self-verification."""
    from needleforge.runtime.preflight import check_nemo

    params = _params(params_path)
    with console.status("checking the model backends…"):
        check_nemo(params.nemo)
    from needleforge.stages.nemo import generate_store

    with StageProgress("nemo", "target steps (plan, verdict)") as report:
        outcome = generate_store(db=db, params=params, on_step=report)
    result, cost = outcome.result, outcome.probe_cost
    passed = len(result.releasable())
    console.print(
        f"nemo: {len(result.montages)} short montage(s), {len(result.questions)} question(s), "
        f"{passed} passed verification; "
        f"{len(result.skipped)} target(s) skipped"
    )
    if cost is not None:
        console.print(f"  negative check: {len(result.rejected_negatives)} negative(s) passed "
                      f"over; {cost.describe()}", highlight=False)
    # A describe skip reads "<describer name>: <why>"; a name may hold ":" (qwen2.5vl:7b)
    # but not ": ", so the why starts after the first ": ".
    print_reason_groups(console, "skipped", [
        (s.stage, s.reason.split(": ", 1)[-1] if s.stage == "describe" else s.reason)
        for s in result.skipped])
    print_reason_groups(console, "failed verification", [
        ("verify", v.reason) for v in result.verifications if not v.passed])


@app.command()
@_user_errors
def expand(db: DbOption = DEFAULT_DB, params_path: ParamsOption = None) -> None:
    """NeMo stage 3: medium and long montages, multi-needle questions (from verified short)."""
    from needleforge.stages.expand import benchmark_of, expand_store

    params = _params(params_path)
    with StageProgress("expand", "montage groups") as report:
        result = expand_store(db=db, params=params, on_group=report)
    table = benchmark_of(db=db)
    console.print(
        f"expand: {len(result.montages)} montage(s), {len(result.questions)} question(s), "
        f"{len(result.releasable())} passed; {len(result.shortfalls)} montage(s) fell short"
    )
    if result.probe_cost is not None:
        console.print(f"  negative check: {result.probe_cost.describe()}", highlight=False)
    for cell in result.cells:
        if cell.short_by:
            console.print(f"  {cell.bucket}/{cell.needles}/{cell.needle_type}: made "
                          f"{cell.made} of {cell.wanted} wanted ({cell.eligible} eligible)",
                          highlight=False)
    print_reason_groups(console, "short", [(f"{f.bucket}/{f.needles}", f.reason)
                                   for f in result.shortfalls])
    print_reason_groups(console, "failed verification", [
        ("verify", v.reason) for v in result.verifications if not v.passed])
    console.print(table.to_markdown(), markup=False, highlight=False)


@app.command()
@_user_errors
def vnbench(
    db: DbOption = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", help="Folder for samples, questions.jsonl and "
                                      "vnbench.json.", file_okay=False)] = Path("data/vnbench"),
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache", help="Haystack clip and asset cache (default: <out>/.cache).",
        file_okay=False)] = None,
    params_path: ParamsOption = None,
) -> None:
    """VideoNIAH / VNBench: needles edited into or inserted between haystack frames."""
    from needleforge.stages.vnbench import vnbench_store

    params = _params(params_path)
    with StageProgress("vnbench", "haystacks and samples") as report:
        result = vnbench_store(db=db, out=out, cache_dir=cache_dir, params=params,
                               on_step=report)
    console.print(f"vnbench: {len(result.samples)} sample(s) × 4 rotations → "
                  f"{len(result.questions)} question record(s) in {out}; "
                  f"{len(result.skipped)} skipped")
    for skip in result.skipped[:3]:
        console.print(f"  skipped {skip.what}: {skip.reason}", highlight=False)
    if len(result.skipped) > 3:
        console.print(f"  … and {len(result.skipped) - 3} more skipped", highlight=False)


@app.command()
@_user_errors
def render(
    db: DbOption = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", help="Folder for <montage_id>.mp4 files.",
                                      file_okay=False)] = Path("data/render"),
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache", help="Scene-clip cache (default: <out>/.cache).",
                     file_okay=False),
    ] = None,
    params_path: ParamsOption = None,
) -> None:
    """Render montage plans: each scene encoded once, montages joined by stream copy.

    Montages whose every question the verifier refused are not rendered (no release ships
    them)."""
    from needleforge.stages.render import render_store

    params = _params(params_path)
    with StageProgress("render", "scene clips and montages") as progress:
        report = render_store(db=db, out=out, cache_dir=cache_dir, params=params,
                              on_step=progress)
    skipped = sum(1 for m in report.montages if m.skipped)
    refused = (f"; {len(report.refused)} not rendered, every question on them refused by "
               f"the verifiers" if report.refused else "")
    console.print(
        f"rendered {len(report.montages) - skipped} montage(s) into {out} ({skipped} already "
        f"current){refused}; scene clips: {report.cache_misses} encoded, {report.cache_hits} "
        f"reused; "
        f"encode {report.encode_cpu_s:.1f} CPU s, join {report.join_cpu_s:.1f} CPU s, "
        f"{report.wall_s:.1f} s wall"
    )


@app.command()
@_user_errors
def validate(
    db: DbOption = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", help="Folder for the quality report "
                                      "(Data Docs in <out>/quality/).", file_okay=False)]
    = Path("data/quality"),
    questions: Annotated[Path | None, typer.Option(
        "--questions", help="A questions.jsonl to check too.", dir_okay=False)] = None,
    release_dir: Annotated[Path | None, typer.Option("--release", help="A release folder to "
                                                     "check too.", file_okay=False)] = None,
    params_path: ParamsOption = None,
) -> None:
    """Run the Great Expectations quality gate; exit 1 listing every failing expectation."""
    from needleforge.stages.validate import run_checks

    with StageProgress("validate", "gate steps") as report:
        result = run_checks(db=db, out=out, params=_params(params_path), questions=questions,
                            release_dir=release_dir, on_step=report)
    console.print(result.to_text(), highlight=False, markup=False)
    if not result.passed:
        raise typer.Exit(code=1)


@app.command()
@_user_errors
def release(
    name: Annotated[str, typer.Argument(help="Release name, e.g. 2026.11-sample.")],
    db: DbOption = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", help="Folder holding releases.",
                                      file_okay=False)] = Path("releases"),
    render_dir: Annotated[Path | None, typer.Option(
        "--render", help="Rendered montages (<montage_id>.mp4); omit for plans only.",
        file_okay=False)] = None,
    vnbench: Annotated[Path | None, typer.Option("--vnbench", help="VNBench folder to ship.",
                                                 file_okay=False)] = None,
    previous: Annotated[Path | None, typer.Option(
        "--previous", help="The previous release, for the changelog.", file_okay=False)] = None,
    earlier: Annotated[list[Path] | None, typer.Option(
        "--earlier", help="Earlier release (folder/manifest) to flag reused sources against; "
        "repeatable.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a release of the "
                                            "same name.")] = False,
    human_verdicts: Annotated[Path | None, typer.Option(
        "--human-verdicts", dir_okay=False, help="Verdict file (JSONL) to record in --db "
        "first (a missing file records none).")] = None,
    params_path: ParamsOption = None,
) -> None:
    """Export verified questions, plans, videos, card, exports and a manifest, gated by GX."""
    from needleforge.stages.release import release_store

    with StageProgress(f"release {name}", "build steps") as progress:
        report = release_store(db=db, name=name, out_root=out, render_dir=render_dir,
                               params=_params(params_path), previous=previous,
                               vnbench_dir=vnbench, earlier=earlier or [], overwrite=overwrite,
                               on_step=progress, human_verdicts=human_verdicts,
                               on_verdicts=lambda recorded: console.print(
                                   f"{human_verdicts} → {db}\n{recorded.to_text()}",
                                   highlight=False, markup=False, soft_wrap=True))
    console.print(report.summary(), highlight=False, markup=False)


# publish and pull live in cli.release, evaluate, score and leaderboard in cli.evaluate, review
# in cli.review (kept out of this module to keep it short)
app.command()(pull)
app.command()(publish)
app.command()(evaluate)
app.command()(score)
app.command()(leaderboard)
app.command()(review)


@app.command()
def doctor() -> None:
    """Show which ffmpeg, PyAV and model files are in use, and why (exit 2 on a problem)."""
    from needleforge.cli.doctor import diagnose, render

    found = diagnose()
    console.print(render(found), markup=False, highlight=False, soft_wrap=True)
    if found.problems:
        raise typer.Exit(code=2)


@app.command()
@_user_errors
def status(db: DbOption = DEFAULT_DB) -> None:
    """Show what the store holds: row counts per table and the refused rows."""
    from needleforge.store import Store

    with Store(db, read_only=True) as store:
        counts = store.counts()
        rejections = store.rejections()
        version_ = store.schema_version
    console.print(counts_table(f"{db} (schema v{version_})", counts))
    if rejections:
        console.print(rejection_table(rejections))


if __name__ == "__main__":  # pragma: no cover
    app()
