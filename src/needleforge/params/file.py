"""The params file as a whole: its model (:class:`Params`) and the one rule for reading one.

The section models are the one owner of every default: ``params.yaml`` (the sample recipe that
``make demo`` runs) holds only its deliberate differences from them, and a run given no params
file uses them as they are (:func:`resolve_params`). Every model forbids unknown keys, so a
typo (``sed:`` for ``seed:``) fails loudly with the key named instead of silently using a
default; a key that moved (:data:`MOVED_KEYS`) is named with its new place. Paths are not
parameters: each stage's inputs and outputs come from its command line, as DVC stages declare
them; the model files a backend's options name are read relative to the params file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from needleforge.errors import ConfigError
from needleforge.params.base import ParamsSection as _Section
from needleforge.params.base import anchor_paths
from needleforge.params.evaluate import EvaluateParams
from needleforge.params.expand import ExpandParams
from needleforge.params.ingest import IngestParams
from needleforge.params.nemo import MOVED_KEYS as NEMO_MOVED_KEYS
from needleforge.params.nemo import NemoParams
from needleforge.params.objects import ObjectParams
from needleforge.params.quality import QualityParams
from needleforge.params.release import ReleaseParams
from needleforge.params.render import RenderParams
from needleforge.params.review import ReviewParams
from needleforge.params.runner import RunnerParams
from needleforge.params.scenes import SceneParams
from needleforge.params.studio import StudioParams
from needleforge.params.vnbench import VNBenchParams

#: Section -> {old key: its place in the section now}, for keys a params file may still set.
MOVED_KEYS: Mapping[str, Mapping[str, str]] = {"nemo": NEMO_MOVED_KEYS}


class Params(_Section):
    """The whole ``params.yaml``."""

    studio: StudioParams = Field(default_factory=StudioParams)
    ingest: IngestParams = Field(default_factory=IngestParams)
    scenes: SceneParams = Field(default_factory=SceneParams)
    objects: ObjectParams = Field(default_factory=ObjectParams)
    nemo: NemoParams = Field(default_factory=NemoParams)
    render: RenderParams = Field(default_factory=RenderParams)
    expand: ExpandParams = Field(default_factory=ExpandParams)
    quality: QualityParams = Field(default_factory=QualityParams)
    release: ReleaseParams = Field(default_factory=ReleaseParams)
    vnbench: VNBenchParams = Field(default_factory=VNBenchParams)
    runner: RunnerParams = Field(default_factory=RunnerParams)
    evaluate: EvaluateParams = Field(default_factory=EvaluateParams)
    review: ReviewParams = Field(default_factory=ReviewParams)


class ParamsError(ConfigError):
    """Raised by :func:`resolve_params`; the message names the file and each bad key."""


def _problems(err: ValidationError) -> list[str]:
    lines = []
    for item in err.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            lines.append(f"  - unknown key '{where}'")
        else:
            lines.append(f"  - {where}: {item['msg']} (got {item.get('input')!r})")
    return lines


def _split_moved(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the keys of :data:`MOVED_KEYS`, and a line naming each one's new place
    (the rest is still validated, so one message lists every problem of the file)."""
    kept, moved = dict(data), []
    for section, moves in MOVED_KEYS.items():
        body = data.get(section)
        if isinstance(body, dict) and moves.keys() & body.keys():
            kept[section] = {k: v for k, v in body.items() if k not in moves}
            moved += [f"  - {section}.{old}: moved to {section}.{moves[old]}"
                      for old in body if old in moves]
    return kept, moved


def parse_params(data: Any, *, source: str = "params") -> Params:
    """Validate a parsed params mapping.

    Raises:
        ParamsError: ``data`` is not a mapping, or has unknown, moved or invalid keys; the
            message names ``source`` and each bad key (a moved key with its new place).
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: expected a mapping of sections, got {type(data).__name__}")
    kept, problems = _split_moved(data)
    try:
        params = Params.model_validate(kept)
    except ValidationError as err:
        problems += _problems(err)
    if problems:
        raise ParamsError("\n".join([f"{source}: invalid parameters", *problems]))
    return params


#: The store every ``needleforge`` command and every flow reads and writes unless ``--db``
#: (a flow's ``db``) names another.
DEFAULT_DB = Path("data/needleforge.duckdb")

#: How a command line describes ``--params`` (the CLI and every flow), per :func:`resolve_params`.
PARAMS_HELP = ("Params file to read, e.g. params.yaml, the sample recipe make demo runs "
               "(default: none, the built-in defaults of needleforge.params).")


def resolve_params(path: Path | None) -> Params:
    """The parameters of a run: the file at ``path``, or the built-in defaults when None.

    The one rule for "no params file given", used by every CLI command (``--params``
    omitted) and every flow (``params_path=None``), so the same call does the same thing from
    either. The rule is the built-in defaults, never a ``./params.yaml`` found in the working
    directory: what a run does then depends on its arguments alone, not on where it was
    started (a Prefect worker, a test, a shell in another folder), and the defaults have one
    owner, the section models. ``params.yaml`` is the sample recipe, holding only its
    differences from these defaults; ``dvc repro`` (``make demo``), the refresh deployment
    (``prefect.yaml``) and the documented flow commands name it with ``--params params.yaml``.
    Relative model paths in it (``checkpoint``, ``python``, ``model_dir``, …) are taken from
    the file's own folder, wherever the command runs (:func:`~.base.anchor_paths`).

    Raises:
        ParamsError: the file is missing, not UTF-8, not YAML, or has unknown, moved or
            invalid keys; the message names the file and each bad key.
    """
    if path is None:
        return Params()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamsError(f"{path}: params file not found") from None
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None
    return parse_params(anchor_paths(data, base=path.absolute().parent), source=str(path))


def load_params(path: Path | None) -> Params:
    """The same as :func:`resolve_params` (one rule), under the name older callers use."""
    return resolve_params(path)
