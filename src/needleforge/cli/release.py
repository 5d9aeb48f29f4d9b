"""The ``publish`` and ``pull`` commands: a release's way into and out of a DVC remote.

Kept out of :mod:`needleforge.cli.main` (which registers them) so that module stays a short list
of stage commands. ``publish`` is the step a refresh runs after building a release, on its
own: a publish that failed (no remote, remote not writable, push cut off) is retried with
it, without rebuilding anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from needleforge.cli.support import user_errors

console = Console()


@user_errors
def publish(
    release_dir: Annotated[Path, typer.Argument(help="The release folder, e.g. "
                                                "releases/2026.11.29-0300.", file_okay=False)],
    tag: Annotated[str, typer.Option("--tag", help="Git tag that pins the release.")],
    repo: Annotated[Path, typer.Option("--repo", help="The git + DVC repository holding the "
                                       "release.", file_okay=False)] = Path(),
    remote: Annotated[str | None, typer.Option("--remote", help="DVC remote (default: the "
                                               "repository's default remote).")] = None,
) -> None:
    """Track a built release with DVC, push and verify its data, then commit and tag it."""
    from needleforge.release import publish as run_publish

    with console.status(f"publishing {release_dir} as {tag}…"):
        result = run_publish(release_dir, repo=repo, tag=tag, remote=remote)
    console.print(f"published {result.path} as tag {result.tag} (commit {result.commit[:12]}); "
                  f"data pushed to DVC remote {result.remote!r} and verified", highlight=False)


@user_errors
def pull(
    rev: Annotated[str, typer.Option("--rev", help="Git tag (or commit) of the release.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to fetch into (created; may exist "
                                      "empty).", file_okay=False)],
    repo: Annotated[str, typer.Option("--repo", help="Git URL or path of a needleforge "
                                      "repository.")] = ".",
    path: Annotated[str | None, typer.Option(
        "--path", help="Release folder inside the repo (default: the one the tag published, "
        "from releases/index.json).")] = None,
) -> None:
    """Fetch a pinned release (DVC-tracked, tagged) and check it against its manifest."""
    from needleforge.release import pull as run_pull

    with console.status(f"fetching the release at {rev}…"):
        fetched = run_pull(rev=rev, repo=repo, out=out, path=path)
    n_files = sum(1 for p in fetched.rglob("*") if p.is_file())
    console.print(f"release at {rev} from {repo} is in {fetched} ({n_files} files, sha256 "
                  "checked against its manifest)", highlight=False)
