"""The release card (``card.md`` + ``card.html``) and its plots.

The card says what a release holds and where it came from: counts in the NeMo paper's table
shapes, plots of durations, targets, needles and verification, the licences of the sources and
the code, packages and backends that made it. It is built from the same inputs as the
manifest, so it carries no clock time either.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needleforge.params import ReleaseParams
from needleforge.records import (
    Montage,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)
from needleforge.release import stats
from needleforge.release.card_scoring import scoring_section
from needleforge.release.exports import task_name
from needleforge.release.file_io import Record
from needleforge.release.manifest import CodeVersion
from needleforge.release.markup import (
    Block,
    Bullets,
    Code,
    Document,
    Figure,
    Paragraph,
    Section,
    Table,
    to_html,
    to_markdown,
)

if TYPE_CHECKING:
    from needleforge.release.plots import Plot


@dataclasses.dataclass(frozen=True, slots=True)
class CardInputs:
    """Everything the card shows besides the released records themselves.

    ``released``/``montages`` are the shipped questions and their montages (store records);
    ``questions``/``verifications`` are the whole store's (for pass rates); ``videos`` are the
    sources of the released questions; ``excluded`` counts questions left out, by reason;
    ``source_rows``/``excluded_sources`` are the manifest's source lists and
    ``compared_with`` the earlier releases checked for contamination.
    """

    name: str
    params: ReleaseParams
    released: Sequence[Question]
    montages: Sequence[Montage]
    videos_included: bool
    excluded: Mapping[str, int]
    code: CodeVersion
    backends: Mapping[str, Sequence[Mapping[str, str]]]
    questions: Sequence[Question]
    verifications: Sequence[Verification]
    objects: Sequence[ObjectTrack]
    tags: Sequence[SceneTag]
    scenes: Sequence[Scene]
    videos: Sequence[Video]
    source_rows: Sequence[Mapping[str, Any]] = ()
    excluded_sources: Sequence[Mapping[str, Any]] = ()
    compared_with: Sequence[str] = ()
    #: Sections the build adds after its gate (quality gate, failed sources), shown before
    #: the provenance; see :mod:`needleforge.release.card_sections`.
    extra: Sequence[Section] = ()
    #: The shortest answer window a question may have (``quality.min_answer_window_s``).
    min_window_s: float = 3.0


def make_plots(root: Path, records: Sequence[Record], inputs: CardInputs) -> list[Plot]:
    """Write every plot of the card under ``root/plots``; returns them in card order."""
    from needleforge.release import plots  # matplotlib costs ~0.4 s to import: only here

    (root / "plots").mkdir(exist_ok=True)  # the bias audit's plots may be there already
    params = inputs.params
    durations: dict[str, dict[str, float]] = defaultdict(dict)
    needles: dict[str, Counter[int]] = defaultdict(Counter)
    for r in records:
        if r["family"] != "nemo":
            continue
        durations[r["bucket"]][r["video"]] = float(r["duration_s"])
        needles[r["needle_type"]][int(r["n_needles"])] += 1
    out = [plots.duration_histogram(root, bucket=b, durations_s=sorted(durations[b].values()),
                                    bins=params.histogram_bins)
           for b in stats.BUCKETS if durations.get(b)]
    labels = stats.target_labels(records, objects=inputs.objects, tags=inputs.tags)
    out.append(plots.label_bars(root, name="target_labels", counts=labels,
                                title=f"Target labels (top {params.top_n_labels})",
                                top_n=params.top_n_labels))
    programs = stats.target_programs(records, scenes=inputs.scenes, videos=inputs.videos)
    out.append(plots.label_bars(root, name="target_programs", counts={"all": programs},
                                title="Programs of the target videos",
                                top_n=params.top_n_labels))
    out.append(plots.needle_count_bars(root, counts=needles))
    rates = stats.pass_rates(inputs.questions, inputs.verifications)
    if rates:
        out.append(plots.pass_rate_bars(root, rates=rates))
    return out


def _summary(records: Sequence[Record], inputs: CardInputs) -> Section:
    p, code = inputs.params, inputs.code
    commit = code.commit or "unknown (not built from a git checkout)"
    if code.dirty:
        commit += " with uncommitted changes"
    families = Counter(r["family"] for r in records)
    per_family = ", ".join(f"{k}: {v}" for k, v in sorted(families.items()))
    items = [
        f"Questions: {len(records)} ({per_family})",
        f"Montages: {len(inputs.montages)}",
        "Videos: rendered montages in videos/" if inputs.videos_included
        else "Videos: not included (montage plans only; render them from montages.jsonl)",
        f"Left out: {inputs.excluded.get('failed', 0)} failed verification, "
        f"{inputs.excluded.get('unverified', 0)} never verified, "
        f"{inputs.excluded.get('short_window', 0)} with an answer window shorter than "
        f"{inputs.min_window_s:g} s",
        f"Code: needleforge commit {commit}",
    ]
    if p.release_date is not None:
        items.append(f"Release date: {p.release_date.isoformat()}")
    text = ("Needle grounding questions over montages of authorized videos: each question asks "
            "when a described object or scene appears, and its answer is every time span of "
            "that needle in the montage.")
    return Section("Summary", (Paragraph(text), Bullets(tuple(items))))


def _usage(name: str) -> Section:
    task = task_name(name)
    files = Bullets((
        "questions.jsonl / questions.parquet: one question per line or row",
        "montages.jsonl: montage plans (segments, roles, needle indices, sources)",
        "videos/<montage_id>.mp4: rendered montages (when included)",
        "README.md: how to load this release with datasets, VNBench's scripts, VLMEvalKit, "
        "moment_detr and lmms-eval; data/<family>.parquet: one file per family",
        "exports/: lmms-eval tasks, VLMEvalKit TSVs and dataset module, QVHighlights JSONL, "
        "VNBench JSON",
        "sources.json: every source video's licence (rights holder, licence, scope, "
        "valid until) and earlier releases that used it",
        "quality/: the Great Expectations quality report (Data Docs) the release passed",
        "manifest.json: sha256 and size of every file, params, code and model versions",
        "CHANGELOG.md: changes since the previous release",
    ))
    cmds = Code(
        "needleforge score --questions questions.jsonl --predictions predictions.jsonl\n"
        f"lmms-eval --include_path exports/lmms_eval --tasks {task} ...  # from any folder"
    )
    return Section("Files and usage", (files, cmds))


def _provenance(inputs: CardInputs) -> Section:
    rows = tuple(
        (table, ", ".join(f"{k}={v}" for k, v in entry.items()))
        for table, entries in inputs.backends.items() for entry in entries
    )
    return Section("Models and provenance", (
        Table(("Store table", "Backend"), rows, caption="Model backends seen in the store"),
        Paragraph("Package versions, params and seeds are listed in manifest.json."),
    ))


def build_card(
    records: Sequence[Record], *, inputs: CardInputs, plot_list: Sequence[Plot]
) -> Document:
    """Assemble the card document (see the module docstring for its contents)."""
    by_path = {p.path: p for p in plot_list}

    def image(path: str) -> tuple[Block, ...]:
        return (Figure(path, by_path[path].alt),) if path in by_path else ()

    durations = tuple(Figure(p.path, p.alt) for p in plot_list
                      if p.path.startswith("plots/montage_duration_"))
    labels = stats.target_labels(records, objects=inputs.objects, tags=inputs.tags)
    top = {k: sum(c[k] for c in labels.values())
           for k in {k for c in labels.values() for k in c}}
    top_rows = dict(sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))
                    [: inputs.params.top_n_labels])
    rates = stats.pass_rates(inputs.questions, inputs.verifications)
    sections = [
        _summary(records, inputs),
        Section("Statistics", (stats.table2(inputs.montages, inputs.released),
                               stats.summary_table(records, name=inputs.name))),
        Section("Montage durations", durations),
        Section("Targets", (*image("plots/target_labels.png"),
                            stats.count_table(top_rows, key="Label",
                                              caption="Most frequent target labels"),
                            *image("plots/target_programs.png"))),
        Section("Needles per question", image("plots/needles_per_question.png")),
        Section("Verification", (*image("plots/verification_pass_rates.png"),
                                 stats.pass_rate_table(rates),
                                 stats.failure_table(inputs.verifications),
                                 stats.authorship_table(records))),
        Section("VNBench", (stats.vnbench_table(records),)) if any(
            r["family"] == "vnbench" for r in records) else None,
        scoring_section(records, min_window_s=inputs.min_window_s,
                        n_short=inputs.excluded.get("short_window", 0)),
        Section("Sources and licences", (
            stats.licence_table(inputs.videos), stats.source_table(inputs.source_rows),
            Paragraph(_authorization_text(inputs.params)),
            stats.excluded_table(inputs.excluded_sources))),
        Section("Contamination", _contamination(inputs)),
        *inputs.extra,
        _provenance(inputs),
        _usage(inputs.name),
    ]
    return Document(f"{inputs.params.title}: {inputs.name}",
                    tuple(s for s in sections if s is not None))


def _authorization_text(params: ReleaseParams) -> str:
    day = params.release_date.isoformat() if params.release_date else "the build day"
    return (f"Every source's licence is valid on {day} and grants "
            f"{', '.join(sorted(params.required_scopes))}; sources that do not are left out "
            "with their questions (below).")


def _contamination(inputs: CardInputs) -> tuple[Block, ...]:
    if not inputs.compared_with:
        return (Paragraph("No earlier release was compared against."),)
    flagged = [r for r in inputs.source_rows if r["earlier_releases"]]
    excluded = [r for r in inputs.excluded_sources if str(r["reason"]).startswith(
        "contaminated")]
    text = (f"Sources compared by sha256 with {', '.join(inputs.compared_with)}: "
            f"{len(flagged)} shipped source(s) were used before, {len(excluded)} excluded.")
    rows = tuple((str(r["video_id"]), str(r["sha256"])[:16], ", ".join(r["earlier_releases"]))
                 for r in flagged)
    return (Paragraph(text), Table(("Video", "sha256 (prefix)", "Earlier releases"), rows,
                                   caption="Shipped sources already used by earlier releases"))


def write_card(root: Path, records: Sequence[Record], inputs: CardInputs) -> Document:
    """Write the plots, ``card.md`` and ``card.html`` under ``root``; returns the document."""
    doc = build_card(records, inputs=inputs, plot_list=make_plots(root, records, inputs))
    (root / "card.md").write_text(to_markdown(doc), encoding="utf-8")
    (root / "card.html").write_text(to_html(doc), encoding="utf-8")
    return doc

