"""A leaderboard over score files written by ``needleforge score --out`` (one per model).

The model's name is the score file's stem (``scores/qwen2-vl-7b.json`` → ``qwen2-vl-7b``), or
its ``model`` key when the file has one. Primary metrics (blank when a file lacks the section):

- NeMo (grounding, ``family=nemo``, else all grounding): Recall@1x at tIoU 0.7 and 0.5 and
  average mAP, tIoU on exact seconds, with Recall@1x 0.7 on the paper's whole-second sets
  beside (``docs/metrics.md``);
- VNBench: overall circular accuracy (mean of the retrieval, ordering and counting means).

Each headline figure carries the 95 % interval the scorer computed (cluster bootstrap over
questions; VNBench samples resampled within each task, :mod:`needleforge.evaluate.intervals`),
as the bias audit gives its baselines', and the tables end with the pairs of models whose
intervals overlap: those the questions cannot tell apart, whatever their order.

Rows are sorted by Recall@1x 0.7, then VNBench overall, best first. The plot shows Recall@1x
at tIoU 0.7 per montage duration bucket (short, medium, long) for each model, the shape of
NeMo's Fig. 5 (accuracy falling as the haystack grows).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from needleforge.errors import EvaluationError
from needleforge.evaluate.intervals import Interval, overlaps
from needleforge.records.questions import BUCKETS

COLUMNS = ("model", "R@1x 0.7", "R@1x 0.5", "avg mAP", "VNBench overall", "R@1x 0.7 (s)")
#: The metrics whose intervals the overlap notes compare, by display name.
COMPARED = {"R@1x 0.7": "recall_07", "VNBench overall": "vnbench_overall"}
NOTE = ("tIoU on exact seconds; (s): on the NeMo paper's whole-second sets. [low–high]: 95 % "
        "interval over the questions (VNBench: samples resampled within each task).")


def _cell(value: float | None, ci: Interval | None = None) -> str:
    if value is None:
        return "—"
    shown = f"{100 * value:.2f}"
    return shown if ci is None else f"{shown} [{100 * ci[0]:.1f}–{100 * ci[1]:.1f}]"


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderboardRow:
    """One model's primary metrics (fractions in [0, 1]; None when not measured), their 95 %
    intervals (None when the score file has none) and Recall@1x 0.7 on whole-second sets."""

    model: str
    recall_07: float | None
    recall_05: float | None
    average_map: float | None
    vnbench_overall: float | None
    recall_07_by_bucket: Mapping[str, float]
    recall_07_ci: Interval | None = None
    recall_05_ci: Interval | None = None
    average_map_ci: Interval | None = None
    vnbench_overall_ci: Interval | None = None
    recall_07_second_set: float | None = None

    def cells(self) -> list[str]:
        """The row as display strings (percent with 2 decimals and the interval, ``—`` when
        missing)."""
        return [self.model, _cell(self.recall_07, self.recall_07_ci),
                _cell(self.recall_05, self.recall_05_ci),
                _cell(self.average_map, self.average_map_ci),
                _cell(self.vnbench_overall, self.vnbench_overall_ci),
                _cell(self.recall_07_second_set)]

    def interval(self, metric: str) -> Interval | None:
        """The 95 % interval of ``metric`` (a :data:`COMPARED` field), None when unknown."""
        value: Interval | None = getattr(self, f"{metric}_ci")
        return value


@dataclasses.dataclass(frozen=True, slots=True)
class Leaderboard:
    """Rows best first, with renderers for the terminal, Markdown, HTML and a PNG plot."""

    rows: tuple[LeaderboardRow, ...]

    def overlapping(self) -> dict[str, list[tuple[str, str]]]:
        """Per compared metric, the pairs of models (in row order) whose 95 % intervals
        overlap: the questions do not tell them apart. Rows without an interval are left out."""
        out: dict[str, list[tuple[str, str]]] = {}
        for name, field in COMPARED.items():
            rows = [(r.model, ci) for r in self.rows if (ci := r.interval(field)) is not None]
            out[name] = [(a, b) for i, (a, ci_a) in enumerate(rows)
                         for b, ci_b in rows[i + 1:] if overlaps(ci_a, ci_b)]
        return out

    def notes(self) -> list[str]:
        """What the table's figures mean, and for each compared metric which models' intervals
        overlap (or that none do)."""
        lines = [NOTE]
        for name, pairs in self.overlapping().items():
            measured = sum(r.interval(COMPARED[name]) is not None for r in self.rows)
            if measured < 2:
                continue
            if pairs:
                shown = ", ".join(f"{a} and {b}" for a, b in pairs)
                lines.append(f"{name}: intervals overlap, not told apart by these questions: "
                             f"{shown}.")
            else:
                lines.append(f"{name}: every model's interval is apart from every other's.")
        return lines

    def to_text(self) -> str:
        """A fixed-width table for the terminal."""
        table = [list(COLUMNS), *(row.cells() for row in self.rows)]
        widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(line, widths, strict=True)))
                 for line in table]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join([*lines, "", *self.notes()]) + "\n"

    def to_markdown(self) -> str:
        """A Markdown table, then the notes (:meth:`notes`)."""
        lines = ["| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * (len(COLUMNS) - 1)]
        lines += ["| " + " | ".join(row.cells()) + " |" for row in self.rows]
        return "\n".join([*lines, "", *self.notes()]) + "\n"

    def to_html(self) -> str:
        """An HTML ``<table>`` and its notes (escaped; no styles, so it can sit in any page)."""
        return _html_template().render(columns=COLUMNS, rows=[r.cells() for r in self.rows],
                                       notes=self.notes())

    def plot(self, path: str | Path) -> Path:
        """Write a PNG of Recall@1x (tIoU 0.7) against montage duration bucket, one line per
        model; models without grounding scores are left out. Returns ``path``."""
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        from matplotlib import pyplot as plt

        path = Path(path)
        figure, axes = plt.subplots(figsize=(6, 4), dpi=120)
        try:
            for row in self.rows:
                xs = [i for i, b in enumerate(BUCKETS) if b in row.recall_07_by_bucket]
                if xs:
                    ys = [100 * row.recall_07_by_bucket[BUCKETS[i]] for i in xs]
                    axes.plot(xs, ys, marker="o", label=row.model)
            axes.set_xticks(range(len(BUCKETS)), [b.capitalize() for b in BUCKETS])
            axes.set_xlabel("montage duration")
            axes.set_ylabel("Recall@1x, tIoU 0.7 (%)")
            axes.set_ylim(0, 100)
            axes.grid(alpha=0.3)
            if axes.get_legend_handles_labels()[0]:
                axes.legend(fontsize="small")
            figure.tight_layout()
            path.parent.mkdir(parents=True, exist_ok=True)
            figure.savefig(path, format="png")
        finally:
            plt.close(figure)
        return path


#: The table (Jinja2, autoescaped as :mod:`needleforge.release.markup`'s card: a model name
#: comes from a score file and reaches the page as text).
_HTML = """<table class="leaderboard">
<thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>
{% for cells in rows %}
<tr>{% for c in cells %}<td>{{ c }}</td>{% endfor %}</tr>
{% endfor %}
</tbody>
</table>
{% for note in notes %}
<p>{{ note }}</p>
{% endfor %}
"""


@functools.cache
def _html_template() -> jinja2.Template:
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.from_string(_HTML)


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping) or key not in data:
            return None
        data = data[key]
    return data


def _number(value: Any, *, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise EvaluationError(f"{where} = {value!r} is not a finite number")
    return float(value)


def _interval(value: Any, *, where: str) -> Interval | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise EvaluationError(f"{where} = {value!r:.60} is not a [low, high] interval")
    low, high = (_number(v, where=where) for v in value)
    if low is None or high is None or not 0 <= low <= high <= 1:
        raise EvaluationError(f"{where} = {value!r:.60} is not an interval inside [0, 1]")
    return (low, high)


def row_from_scores(model: str, scores: Mapping[str, Any], *,
                    source: str = "") -> LeaderboardRow:
    """The primary metrics of one ``ScoreReport.to_dict()``, with their intervals (score
    files written before the scorer reported intervals have none: blank, not an error).

    Raises:
        EvaluationError: a primary metric present but not a finite number, or an interval
            that is not ``[low, high]`` inside [0, 1].
    """
    grounding = scores.get("grounding") or {}
    main = _get(grounding, "family", "nemo") or _get(grounding, "all", "all")
    where = source or model
    buckets = {b: _number(_get(grounding, "bucket", b, "recall", "0.7"), where=f"{where} {b}")
               for b in BUCKETS}
    return LeaderboardRow(
        model=model,
        recall_07=_number(_get(main, "recall", "0.7"), where=f"{where} recall 0.7"),
        recall_05=_number(_get(main, "recall", "0.5"), where=f"{where} recall 0.5"),
        average_map=_number(_get(main, "average_map"), where=f"{where} average_map"),
        vnbench_overall=_number(_get(scores, "vnbench", "overall"), where=f"{where} overall"),
        recall_07_by_bucket={b: v for b, v in buckets.items() if v is not None},
        recall_07_ci=_interval(_get(main, "recall_ci", "0.7"), where=f"{where} recall_ci 0.7"),
        recall_05_ci=_interval(_get(main, "recall_ci", "0.5"), where=f"{where} recall_ci 0.5"),
        average_map_ci=_interval(_get(main, "average_map_ci"), where=f"{where} average_map_ci"),
        vnbench_overall_ci=_interval(_get(scores, "vnbench", "overall_ci"),
                                     where=f"{where} overall_ci"),
        recall_07_second_set=_number(_get(main, "second_set", "recall", "0.7"),
                                     where=f"{where} second_set recall 0.7"))


def _sort_key(row: LeaderboardRow) -> tuple[float, float, str]:
    return (-(row.recall_07 if row.recall_07 is not None else -1.0),
            -(row.vnbench_overall if row.vnbench_overall is not None else -1.0), row.model)


def leaderboard_from_rows(rows: Sequence[LeaderboardRow]) -> Leaderboard:
    """Rows sorted best first (Recall@1x 0.7, then VNBench overall, then name)."""
    return Leaderboard(rows=tuple(sorted(rows, key=_sort_key)))


def leaderboard(scores_dir: str | Path) -> Leaderboard:
    """Read every ``*.json`` score file of ``scores_dir`` (not recursive) into a leaderboard.

    Raises:
        EvaluationError: the folder is missing or holds no score file, a file is not JSON or
            not a score report (no ``grounding`` / ``choice`` / ``vnbench`` key), or two files
            name the same model.
    """
    folder = Path(scores_dir)
    if not folder.is_dir():
        raise EvaluationError(f"scores folder {folder} does not exist")
    files = sorted(p for p in folder.glob("*.json") if not p.name.endswith(".meta.json"))
    if not files:
        raise EvaluationError(f"{folder} holds no *.json score files (needleforge score --out)")
    rows: dict[str, LeaderboardRow] = {}
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvaluationError(f"cannot read score file {path}: {exc}") from exc
        if not isinstance(data, dict) or not {"grounding", "choice", "vnbench"} & data.keys():
            raise EvaluationError(f"{path} is not a score report (needleforge score --out)")
        model = str(data.get("model") or path.stem)
        if model in rows:
            raise EvaluationError(f"{path}: model {model!r} already scored by another file")
        rows[model] = row_from_scores(model, data, source=str(path))
    return leaderboard_from_rows(list(rows.values()))
