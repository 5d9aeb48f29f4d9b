"""The ``review`` command: contact sheets, or a review round in Label Studio.

Without ``--to``/``--from`` it draws the contact sheets (:func:`needleforge.stages.review
.review_store`). ``--to label-studio`` pushes the questions as tasks to a Label Studio project
(:func:`~needleforge.stages.review.push_to_label_studio`); ``--from label-studio`` pulls the
annotations back into the store as human verdicts (:func:`~needleforge.stages.review
.pull_from_label_studio`); ``--from yaml --verdicts FILE`` stores a hand-written verdict file's
verdicts the same way (:func:`~needleforge.stages.review.record_and_keep`). Both pulls also
merge what they recorded into the verdict file ``--human-verdicts``
(:mod:`needleforge.review.verdict_file`), which the release stage reads after a rebuild.
Kept out of :mod:`needleforge.cli.main` (which registers it) so that module stays short.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from needleforge.cli.support import user_errors
from needleforge.params import DEFAULT_DB, PARAMS_HELP, resolve_params

console = Console()
err_console = Console(stderr=True)


@user_errors
def review(
    db: Annotated[Path, typer.Option("--db", help="DuckDB store.", dir_okay=False)]
    = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", help="Folder for the sheets, index.html and "
                                      "verdicts_template.yaml.", file_okay=False)]
    = Path("data/review"),
    verdicts: Annotated[Path | None, typer.Option(
        "--verdicts", help="Human verdict file (YAML) to count, or to store with --from yaml.",
        dir_okay=False)] = None,
    all_buckets: Annotated[bool, typer.Option(
        "--all-buckets", help="Every question, not only short single-needle ones.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N questions.")]
    = None,
    to: Annotated[Literal["label-studio"] | None, typer.Option(
        "--to", help="Push the questions as tasks to a Label Studio project.")] = None,
    source: Annotated[Literal["label-studio", "yaml"] | None, typer.Option(
        "--from", help="Store human verdicts: a Label Studio project's annotations, or the "
        "--verdicts YAML file.")] = None,
    ls_url: Annotated[str | None, typer.Option(
        "--ls-url", envvar="LABEL_STUDIO_URL", help="Label Studio server (default "
        "review.label_studio_url, http://127.0.0.1:8080).")] = None,
    ls_token: Annotated[str | None, typer.Option(
        "--ls-token", envvar="LABEL_STUDIO_API_KEY", show_default=False,
        help="API token (legacy token or personal access token).")] = None,
    ls_project: Annotated[str | None, typer.Option(
        "--ls-project", help="Project title (default review.project, 'needleforge "
        "review').")] = None,
    media_root: Annotated[Path | None, typer.Option(
        "--media-root", envvar="LOCAL_FILES_DOCUMENT_ROOT", file_okay=False,
        help="The server's LOCAL_FILES_DOCUMENT_ROOT; --videos must lie under it.")] = None,
    videos: Annotated[Path, typer.Option("--videos", file_okay=False, help="Folder of the "
                                         "rendered montages the tasks play.")]
    = Path("data/render"),
    annotators: Annotated[int | None, typer.Option(
        "--annotators", min=1, help="Judges per task (the project's overlap; default "
        "review.annotators, 1).")] = None,
    verdict_file: Annotated[Path, typer.Option(
        "--human-verdicts", dir_okay=False, help="With --from: the JSONL file the pulled "
        "verdicts are merged into, their durable copy (the release stage reads it).")]
    = Path("reviews/human_verdicts.jsonl"),
    restore_config: Annotated[bool, typer.Option(
        "--restore-config", help="With --to: put needleforge's labeling config back on a "
        "project whose config differs (refused otherwise).")] = False,
    params_path: Annotated[Path | None, typer.Option("--params", help=PARAMS_HELP,
                                                     dir_okay=False)] = None,
) -> None:
    """Contact sheets to judge NeMo questions by eye, or a review round in Label Studio
    (--to label-studio, then --from label-studio), and the human verdicts' report."""
    if to is not None and source is not None:
        raise typer.BadParameter("give --to or --from, not both")
    if to is None and source is None:
        _sheets(db, out, verdicts, all_buckets=all_buckets, limit=limit)
        return
    if source == "yaml":
        _from_yaml(db, verdicts, verdict_file)
        return
    from needleforge.review.labelstudio_project import ProjectTarget

    params = resolve_params(params_path)
    target = ProjectTarget.from_env(url=ls_url, token=ls_token, title=ls_project,
                             media_root=media_root, annotators=annotators,
                             params=params.review)
    if to is not None:
        from needleforge.stages.review import push_to_label_studio

        with console.status("pushing to Label Studio…"):
            pushed = push_to_label_studio(db, target, videos=videos, render=params.render,
                                          all_buckets=all_buckets, limit=limit,
                                          restore_config=restore_config)
        console.print(pushed.to_text(), highlight=False, markup=False, soft_wrap=True)
        return
    from needleforge.stages.review import pull_from_label_studio

    with console.status("pulling annotations from Label Studio…"):
        pid, outcome, kept = pull_from_label_studio(db, target, verdict_file=verdict_file)
    console.print(f"Label Studio project {pid} at {target.url} → {db}\n{outcome.to_text()}\n"
                  f"{kept.to_text()}", highlight=False, markup=False, soft_wrap=True)


def _from_yaml(db: Path, verdicts: Path | None, verdict_file: Path) -> None:
    from needleforge.review.human_verdicts import yaml_verdicts
    from needleforge.stages.review import record_and_keep

    if verdicts is None:
        raise typer.BadParameter("--from yaml needs --verdicts FILE")
    outcome, kept = record_and_keep(db, yaml_verdicts(verdicts), path=verdict_file)
    console.print(f"{verdicts} → {db}\n{outcome.to_text()}\n{kept.to_text()}",
                  highlight=False, markup=False, soft_wrap=True)


def _sheets(db: Path, out: Path, verdicts: Path | None, *, all_buckets: bool,
            limit: int | None) -> None:
    from needleforge.runtime.progress import StageProgress
    from needleforge.stages.review import review_store

    with StageProgress("review", "contact sheets") as report:
        outcome = review_store(db, out, verdicts_path=verdicts, all_buckets=all_buckets,
                               limit=limit, on_sheet=report)
    console.print(f"review: {len(outcome.sheets)} contact sheet(s) in {out}; index "
                  f"{outcome.index}; verdict template {outcome.template}", highlight=False)
    if outcome.missing_frames:
        err_console.print(f"[bold yellow]warning:[/] {outcome.missing_frames} frame(s) could "
                          "not be decoded (grey placeholders on the sheets)", highlight=False)
        for problem in outcome.problems[:3]:
            err_console.print(f"  {problem}", highlight=False, markup=False, soft_wrap=True)
    if outcome.report is not None:
        console.print(outcome.report.to_text(), markup=False, highlight=False)

