"""Build a release folder from the store's records: questions, plans, videos, exports, card,
manifest (:func:`needleforge.stages.release.read_release_data` reads them).

``releases/<name>/`` holds::

    questions.jsonl  questions.parquet  montages.jsonl  sources.json
    videos/<montage_id>.mp4 (optional)  videos/<vnbench sample>.mp4 (with a VNBench set)
    README.md + data/<family>.parquet (Hugging Face dataset card and its configs)
    exports/  plots/  card.md  card.html  CHANGELOG.md  quality/ (with a gate)  manifest.json
    build.json (build time and inputs fingerprint, see release.history)

``manifest.json`` hashes every other file (those that record the build run marked
``per_build``, see :mod:`needleforge.release.manifest`).

Why a temporary folder: the whole release is written next to its target and renamed into
place at the end, so a failed or interrupted build never leaves a half-written release (and a
replaced release stays intact until its successor is complete). Every check that can fail on
the inputs (nothing to release, a missing render, an unreadable previous release) runs before
anything is written.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.params import Params, ReleaseParams
from needleforge.quality.bias import audit_release
from needleforge.quality.results import GateResult
from needleforge.records import (
    Montage,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)
from needleforge.records.failures import StageFailure
from needleforge.records.human import HumanVerdict
from needleforge.release import changelog, exports, history, manifest
from needleforge.release.answers import video_path
from needleforge.release.bias_card import bias_section, write_bias_plots
from needleforge.release.card import CardInputs, write_card
from needleforge.release.card_sections import failures_section, quality_section
from needleforge.release.content import Content, gather
from needleforge.release.file_io import (
    place_file,
    sha256_file,
    write_json,
    write_jsonl,
    write_questions_parquet,
)
from needleforge.release.human_review import human_section
from needleforge.release.markup import Section
from needleforge.release.readme import write_readme
from needleforge.release.sources import SOURCES_FILE, EarlierRelease, read_earlier
from needleforge.release.vnbench_files import check_vnbench_release
from needleforge.release.vnbench_input import read_vnbench
from needleforge.runtime.progress import OnCount, Steps

#: ``gate(release_root, video_families)``: checks a finished release folder before it is moved
#: into place, writing its report under ``release_root/quality``; raises to stop the release.
#: What it returns (the gate's verdict) becomes the card's "Quality gate" section.
Gate = Callable[[Path, frozenset[str]], GateResult | None]
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: What a release name may look like (also checked by a refresh before any work).
RELEASE_NAME_RE = _NAME_RE
_SHOWN_IDS = 10


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseReport:
    """What a build wrote: counts, what was left out and why, and the manifest's hash."""

    name: str
    path: Path
    n_questions: int
    n_montages: int
    n_videos: int
    n_files: int
    failed: tuple[str, ...]
    unverified: tuple[str, ...]
    manifest_sha256: str
    changes: Mapping[str, Any]
    excluded_sources: tuple[str, ...] = ()
    contaminated: tuple[str, ...] = ()
    gate: GateResult | None = None
    failures: tuple[StageFailure, ...] = ()

    def summary(self) -> str:
        """One line for a terminal: what shipped and what was left out."""
        return (f"release {self.path}: {self.n_questions} question(s), {self.n_montages} "
                f"montage(s), {self.n_videos} video(s), {self.n_files} file(s); left out "
                f"{len(self.failed)} failed and {len(self.unverified)} unverified question(s) "
                f"and {len(self.excluded_sources)} excluded source(s); "
                f"{len(self.contaminated)} source(s) used by earlier releases")


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseData:
    """The store's records a release is built from."""

    videos: list[Video]
    scenes: list[Scene]
    tags: list[SceneTag]
    objects: list[ObjectTrack]
    montages: list[Montage]
    questions: list[Question]
    verifications: list[Verification]
    human: list[HumanVerdict]

    def question_keys(self) -> dict[str, str]:
        """Question id → content key (what a human verdict is about), for questions whose
        montage is stored."""
        from needleforge.review.verdicts import question_key

        by_id = {m.montage_id: m for m in self.montages}
        return {q.question_id: question_key(q, by_id[q.montage_id]) for q in self.questions
                if q.montage_id in by_id}


def _find_renders(render_dir: Path, montages: Sequence[Montage]) -> dict[str, Path]:
    """``montage_id → <render_dir>/<montage_id>.mp4`` for every montage, all present."""
    if not render_dir.is_dir():
        raise ReleaseError(f"render folder {render_dir} does not exist")
    paths = {m.montage_id: render_dir / f"{m.montage_id}.mp4" for m in montages}
    missing = sorted(mid for mid, p in paths.items() if not p.is_file())
    if missing:
        shown = ", ".join(missing[:_SHOWN_IDS])
        more = f" and {len(missing) - _SHOWN_IDS} more" if len(missing) > _SHOWN_IDS else ""
        raise ReleaseError(f"{len(missing)} released montage(s) have no render in "
                           f"{render_dir}: {shown}{more} (render them, or release plans only)")
    return paths


def _counts(content: Content, n_videos: int) -> dict[str, Any]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for r in content.records:
        per[r["family"]][r["bucket"]] += 1
    samples = {r["question_id"] for r in content.records if r["family"] == "vnbench"}
    dropped = sum(len(e["questions_dropped"]) for e in content.excluded_rows)
    return {
        "questions": len(content.records), "montages": len(content.montages),
        "vnbench_samples": len(samples), "videos": n_videos,
        "source_videos": len(content.sources),
        "questions_by_family_bucket": {f: dict(sorted(c.items())) for f, c in sorted(per.items())},
        "excluded": {"failed": len(content.selection.failed),
                     "unverified": len(content.selection.unverified),
                     "source_excluded": dropped,
                     "short_answer_window": len(content.short_windows)},
    }


def _write_data(root: Path, content: Content, videos: Mapping[str, Path],
                params: ReleaseParams) -> None:
    write_jsonl(root / "questions.jsonl", content.records)
    write_questions_parquet(root / "questions.parquet", content.records)
    write_jsonl(root / "montages.jsonl", content.montage_records)
    write_json(root / SOURCES_FILE, content.source_rows)
    if videos:
        (root / "videos").mkdir()
        for rel, src in sorted(videos.items()):
            place_file(src, root / rel, mode=params.link_mode)


def _policy_doc(content: Content, params: ReleaseParams,
                earlier: Sequence[EarlierRelease]) -> dict[str, Any]:
    """The manifest's authorization and contamination facts (no clock time: see manifest)."""
    return {
        "authorization": {
            "checked_on": params.release_date.isoformat() if params.release_date else None,
            "required_scopes": sorted(params.required_scopes),
            "unauthorized": params.unauthorized,
        },
        "contamination": {
            "compared_with": sorted({e.name for e in earlier}),
            "flagged": [{"video_id": v, "sha256": _sha(content, v), "releases": list(names)}
                        for v, names in sorted(content.policy.contaminated.items())],
            "excluded": params.exclude_contaminated,
        },
        "sources": content.source_rows,
        "excluded_sources": content.excluded_rows,
    }


def _sha(content: Content, video_id: str) -> str:
    for row in (*content.source_rows, *content.excluded_rows):
        if row["video_id"] == video_id:
            return str(row["sha256"])
    return ""


@dataclasses.dataclass(frozen=True, slots=True)
class _Written:
    """What writing a release produced besides its files."""

    changes: changelog.Changelog
    manifest_sha256: str
    gate: GateResult | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Refresh:
    """What the caller knows of the run behind a build: failed sources and its inputs."""

    failures: tuple[StageFailure, ...]
    inputs: history.Fingerprint


#: Progress steps of a build: the store read and gathered, then the data files and videos,
#: the exports, the dataset card and changelog, the gate, the release card, the manifest.
RELEASE_STEPS = 7


def _write_release(
    root: Path, *, name: str, data: ReleaseData, content: Content,
    videos: Mapping[str, Path], params: Params,
    previous: tuple[str, list[dict[str, Any]]] | None,
    earlier: Sequence[EarlierRelease], gate: Gate | None, run: _Refresh, step: Steps,
) -> _Written:
    """Write every file of the release into ``root``; returns the changelog, manifest hash
    and the gate's verdict.

    The gate (when given) runs on the data files before the card (whose "Quality gate"
    section shows its verdict) and the manifest are written; its report goes to
    ``root/quality``. The manifest, written last, hashes every other file, the Data Docs
    pages and ``build.json`` included (:func:`needleforge.release.manifest.file_entries`).
    """
    _write_data(root, content, videos, params.release)
    step()
    exports.write_exports(root, content.records, release_name=name)
    step()
    write_readme(root, content.records, name=name, title=params.release.title)
    changes = changelog.compare(content.records, name=name, previous=previous,
                                excluded=content.excluded_rows, failures=run.failures)
    (root / "CHANGELOG.md").write_text(changes.to_markdown(), encoding="utf-8")
    step()
    plans = {video_path(m.montage_id) for m in content.montages}
    n_nemo_videos = sum(1 for rel in videos if rel in plans)
    verdict = None
    if gate is not None:
        verdict = gate(root, frozenset({"vnbench"} | ({"nemo"} if n_nemo_videos else set())))
    step()
    code = manifest.code_version()
    backends = manifest.store_backends(tags=data.tags, objects=data.objects,
                                       questions=data.questions,
                                       verifications=data.verifications)
    audit = audit_release(content.records, margin=params.quality.blind_margin)
    extra = (quality_section(verdict, root=root),
             bias_section(audit, images=write_bias_plots(root, audit)),
             failures_section(run.failures), _human_section(data, content, params))
    write_card(root, content.records, CardInputs(
        name=name, params=params.release,
        released=content.released_questions, montages=content.montages,
        videos_included=n_nemo_videos > 0,
        excluded={"failed": len(content.selection.failed),
                  "unverified": len(content.selection.unverified),
                  "short_window": len(content.short_windows)},
        code=code, backends=backends, questions=data.questions,
        verifications=data.verifications, objects=data.objects, tags=data.tags,
        scenes=data.scenes, videos=content.sources, source_rows=content.source_rows,
        excluded_sources=content.excluded_rows,
        compared_with=tuple(sorted({e.name for e in earlier})),
        extra=tuple(x for x in extra if x is not None),
        min_window_s=params.quality.min_answer_window_s))
    step()
    history.write_build_info(root, name=name, inputs=run.inputs)
    doc = manifest.build_manifest(
        name=name, params=params, counts=_counts(content, len(videos)), code=code,
        backends=backends, seed_info=manifest.seeds(params, content.montages),
        policy=_policy_doc(content, params.release, earlier), bias=audit.to_dict(),
        files=manifest.file_entries(root, exclude=(history.MANIFEST_FILE,)))
    write_json(root / "manifest.json", doc)
    step()
    return _Written(changes, sha256_file(root / "manifest.json"), verdict)


def _human_section(data: ReleaseData, content: Content, params: Params) -> Section | None:
    """The card's "Human review" section, when there are human verdicts or a requirement."""
    rule = params.release.require_human_review
    if content.human is None or (not data.human and rule == "none"):
        return None
    return human_section(content.human, questions=data.questions,
                         montages={m.montage_id: m for m in data.montages},
                         verifications=data.verifications, rule=rule)


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished release to ``target``, replacing (then deleting) an old one."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        target.rename(old / target.name)
    try:
        tmp.rename(target)
    except OSError as exc:
        if old is not None:
            (old / target.name).rename(target)  # put the previous release back
        raise ReleaseError(f"cannot move the new release into {target}: {exc}") from exc
    if old is not None:
        shutil.rmtree(old)


def _write_atomically(target: Path, write: Callable[[Path], _Written]) -> tuple[_Written, int]:
    """Run ``write`` on a temporary folder beside ``target``, then move it into place.

    On any failure the temporary folder is removed and ``target`` is left as it was.
    Returns what ``write`` returned and the number of files written.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial",
                                dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; a release is meant to be read by others
    done = False
    try:
        written = write(tmp)
        n_files = sum(1 for p in tmp.rglob("*") if p.is_file())
        _swap_into_place(tmp, target)
        done = True
    finally:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)
    return written, n_files


def _videos(content: Content, render_dir: Path | None,
            params: ReleaseParams) -> dict[str, Path]:
    """Release path → file of every video that ships: renders (when asked) and VNBench's."""
    out: dict[str, Path] = {}
    if render_dir is not None and params.include_videos:
        for mid, path in _find_renders(render_dir, content.montages).items():
            out[video_path(mid)] = path
    if content.vnbench is not None:
        shipped = {r["video"] for r in content.records if r["family"] == "vnbench"}
        clash = sorted(shipped & set(out))
        if clash:
            raise ReleaseError(f"VNBench videos {clash} have the names of NeMo montages")
        out.update({rel: p for rel, p in content.vnbench.videos.items() if rel in shipped})
    return dict(sorted(out.items()))


def release_target(*, name: str, out_root: Path, overwrite: bool) -> Path:
    """``out_root/name``, the folder a release named ``name`` goes to.

    Raises:
        ReleaseError: a bad name, or the folder exists and ``overwrite`` is False.
    """
    if not _NAME_RE.fullmatch(name):
        raise ReleaseError(f"release name {name!r} must match {_NAME_RE.pattern}")
    target = out_root / name
    if target.exists() and not overwrite:
        raise ReleaseError(f"release {target} already exists (pass overwrite=True to replace)")
    return target


def build_release(
    *,
    data: ReleaseData,
    name: str,
    out_root: Path,
    render_dir: Path | None,
    params: Params,
    previous: Path | None = None,
    overwrite: bool = False,
    vnbench_dir: Path | None = None,
    earlier: Sequence[Path] = (),
    gate: Gate | None = None,
    failures: Sequence[StageFailure] = (),
    inputs: history.Fingerprint | None = None,
    on_step: OnCount | None = None,
) -> ReleaseReport:
    """Build ``out_root/name/`` from the store's records ``data`` (layout: see the module
    docstring).

    ``params`` is the whole params file: its ``release`` section decides what ships, and all
    of it is recorded in the manifest. Videos are taken from ``render_dir`` (``<id>.mp4``)
    when it is given and ``params.release.include_videos``; otherwise the release holds plans
    only. ``vnbench_dir`` is the VNBench stage's folder, whose tries and videos ship too.
    ``previous`` is the release to write the changelog against; ``earlier`` lists release
    folders (or their ``manifest.json``) whose sources are flagged as contamination.
    ``gate(root, video_families)`` runs on the finished files before they are moved into
    place; raising there leaves no release behind (and an older one intact); its verdict
    goes on the card. ``failures`` (sources a refresh could not use) are listed in the
    changelog and on the card; ``inputs`` is the fingerprint recorded in ``build.json``
    (default: every store video, ``params`` and this code). ``on_step(done, total)`` is
    called after each of the :data:`RELEASE_STEPS` steps of the build.

    Raises:
        ReleaseError: a bad name; ``out_root/name`` exists and ``overwrite`` is False; no
            question passed verification and authorization; a question's montage, a
            montage's source video or a released montage's render is missing; a VNBench
            folder or an earlier or previous release cannot be read; an unauthorized source
            with ``release.unauthorized: error``; VNBench tries lacking one of the 9 official
            task types (named), or otherwise unscorable by VNBench's own evaluation.
        QualityError: raised by ``gate`` when the release fails its checks.
    """
    target = release_target(name=name, out_root=out_root, overwrite=overwrite)
    vnbench = read_vnbench(vnbench_dir, videos={v.video_id: v for v in data.videos}) \
        if vnbench_dir is not None else None
    compared = [read_earlier(p) for p in earlier]
    content = gather(questions=data.questions, verifications=data.verifications,
                     montages=data.montages, videos=data.videos, params=params.release,
                     vnbench=vnbench, earlier=compared,
                     min_window_s=params.quality.min_answer_window_s, human=data.human,
                     keys=data.question_keys() if data.human else {})
    check_vnbench_release(content.records)
    step = Steps(RELEASE_STEPS, on_step)
    step()
    prev = changelog.read_previous(previous) if previous is not None else None
    videos = _videos(content, render_dir, params.release)
    out_root.mkdir(parents=True, exist_ok=True)
    run = _Refresh(tuple(failures), inputs or history.fingerprint(
        (v.sha256 for v in data.videos), params))
    written, n_files = _write_atomically(target, lambda root: _write_release(
        root, name=name, data=data, content=content, videos=videos, params=params,
        previous=prev, earlier=compared, gate=gate, run=run, step=step))
    return ReleaseReport(
        name=name, path=target, n_questions=len(content.records),
        n_montages=len(content.montages), n_videos=len(videos), n_files=n_files,
        failed=content.selection.failed, unverified=content.selection.unverified,
        manifest_sha256=written.manifest_sha256, changes=written.changes.to_dict(),
        excluded_sources=tuple(e["video_id"] for e in content.excluded_rows),
        contaminated=tuple(sorted(content.policy.contaminated)), gate=written.gate,
        failures=run.failures)
