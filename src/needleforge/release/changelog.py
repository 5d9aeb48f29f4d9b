"""What changed between a release and the one before it (``CHANGELOG.md``).

Questions are matched by identity (``question_id``, plus ``try`` for multiple choice): an id
only in the new release is *added*, only in the old one *removed*, in both with a different
question text or answer (spans; options and correct option) *changed*. Counts per family and
bucket show the overall shift. The previous release is read from its ``questions.jsonl``, as
any user of it would.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.records.failures import StageFailure
from needleforge.release.markup import Table

Key = tuple[str, int | None]
_ANSWER_FIELDS = ("question", "answer_spans", "options", "answer_index")


def _key(record: Mapping[str, Any]) -> Key:
    return (str(record["question_id"]), record.get("try"))


def _label(key: Key) -> str:
    return key[0] if key[1] is None else f"{key[0]} (try {key[1]})"


@dataclasses.dataclass(frozen=True, slots=True)
class Changelog:
    """The difference between two releases; ``previous`` is None for a first release."""

    name: str
    previous: str | None
    added: tuple[Key, ...]
    removed: tuple[Key, ...]
    changed: tuple[Key, ...]
    counts: Table
    excluded_sources: tuple[Mapping[str, Any], ...] = ()
    failures: tuple[StageFailure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"previous": self.previous, "added": len(self.added),
                "removed": len(self.removed), "changed": len(self.changed),
                "failed_sources": len(self.failures)}

    def _failures_markdown(self) -> str:
        """Sources the refresh could not use (refused or failed): the release holds the rest."""
        if not self.failures:
            return ""
        lines = "\n".join(f"- {f.stage}: `{f.item}`: {f.reason} ({f.detail})"
                          for f in self.failures)
        return f"\n\n## Sources that failed ({len(self.failures)})\n\n{lines}"

    def _excluded_markdown(self) -> str:
        """Sources left out (licence or contamination) and the questions dropped with them."""
        if not self.excluded_sources:
            return ""
        parts = [f"## Excluded sources ({len(self.excluded_sources)})"]
        for e in self.excluded_sources:
            dropped = ", ".join(f"`{q}`" for q in e["questions_dropped"]) or "(none)"
            parts.append(f"- `{e['video_id']}` (sha256 {str(e['sha256'])[:12]}…): "
                         f"{e['reason']}; questions dropped: {dropped}")
        return "\n\n" + parts[0] + "\n\n" + "\n".join(parts[1:])

    def to_markdown(self) -> str:
        """The changelog as Markdown; every id is listed, sorted."""
        head = f"# Changelog of {self.name}\n\n"
        if self.previous is None:
            return head + "First release: no previous release to compare with.\n\n" + \
                self.counts.to_markdown() + self._excluded_markdown() + \
                self._failures_markdown() + "\n"
        parts = [head + f"Compared with `{self.previous}`: {len(self.added)} added, "
                 f"{len(self.removed)} removed, {len(self.changed)} changed (same id, new "
                 "question text or answer).", self.counts.to_markdown()]
        for title, keys in (("Added", self.added), ("Removed", self.removed),
                            ("Changed", self.changed)):
            lines = "\n".join(f"- `{_label(k)}`" for k in keys) or "(none)"
            parts.append(f"## {title} ({len(keys)})\n\n{lines}")
        return "\n\n".join(parts) + self._excluded_markdown() + self._failures_markdown() \
            + "\n"


def read_previous(release_dir: Path) -> tuple[str, list[dict[str, Any]]]:
    """The name and question records of an earlier release.

    Raises:
        ReleaseError: the folder has no readable ``questions.jsonl``, or a line is not a JSON
            object with a ``question_id``.
    """
    path = release_dir / "questions.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"previous release {release_dir}: cannot read {path.name} "
                           f"({exc})") from exc
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReleaseError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(record, dict) or "question_id" not in record:
            raise ReleaseError(f"{path}:{number}: not a question record")
        records.append(record)
    return release_dir.name, records


def _count_table(
    old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, Any]]
) -> Table:
    def tally(records: Iterable[Mapping[str, Any]]) -> Counter[tuple[str, str]]:
        return Counter((str(r.get("family")), str(r.get("bucket"))) for r in records)

    now = tally(new)
    if old is None:
        return Table(("Family", "Bucket", "Questions"),
                     tuple((f, b, str(now[f, b])) for f, b in sorted(now)))
    before = tally(old)
    rows = tuple((f, b, str(before[f, b]), str(now[f, b]), f"{now[f, b] - before[f, b]:+d}")
                 for f, b in sorted(set(now) | set(before)))
    return Table(("Family", "Bucket", "Previous", "Now", "Change"), rows)


def compare(
    records: Sequence[Mapping[str, Any]],
    *,
    name: str,
    previous: tuple[str, Sequence[Mapping[str, Any]]] | None,
    excluded: Sequence[Mapping[str, Any]] = (),
    failures: Sequence[StageFailure] = (),
) -> Changelog:
    """Compare the new release's records with the previous release's (None: first release).

    ``excluded`` lists the sources this release left out (manifest ``excluded_sources``
    entries); the changelog lists them with the questions dropped. ``failures`` are the
    sources the refresh behind this release could not use, listed by name.
    """
    if previous is None:
        return Changelog(name, None, (), (), (), _count_table(None, records), tuple(excluded),
                         tuple(failures))
    prev_name, old = previous
    new_by = {_key(r): r for r in records}
    old_by = {_key(r): r for r in old}

    def differs(k: Key) -> bool:
        return any(new_by[k].get(f) != old_by[k].get(f) for f in _ANSWER_FIELDS)

    def order(keys: Iterable[Key]) -> tuple[Key, ...]:
        return tuple(sorted(keys, key=lambda k: (k[0], -1 if k[1] is None else k[1])))

    return Changelog(
        name=name, previous=prev_name,
        added=order(new_by.keys() - old_by.keys()),
        removed=order(old_by.keys() - new_by.keys()),
        changed=order(k for k in new_by.keys() & old_by.keys() if differs(k)),
        counts=_count_table(old, records),
        excluded_sources=tuple(excluded),
        failures=tuple(failures),
    )
