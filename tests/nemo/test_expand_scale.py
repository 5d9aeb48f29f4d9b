"""The NeMoBench-Full planning benchmark runs end to end on a tiny corpus.

Only that it works and reports: the figures themselves come from the full-size run
(``benchmarks/plan_scale.py``; see benchmarks/README.md).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "plan_scale.py"


@pytest.fixture(scope="module")
def plan_scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plan_scale_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_caps_reproduce_the_paper_rows(plan_scale: ModuleType) -> None:
    params = plan_scale.expand_params(seed=0, long_targets=3)
    rows = [params.short_multi, params.medium.single, params.medium.multi, params.long.single,
            params.long.multi]
    short_single = plan_scale.split_counts(12_932, (419, 431, 205, 191))[:2]
    total = sum(short_single) + sum(c.object + c.scene for c in rows)
    assert total == 31_378
    assert plan_scale.split_counts(10, (1, 1, 1)) == [4, 3, 3]
    assert plan_scale.split_counts(6_760, (159, 175, 94, 79)) == [2120, 2334, 1253, 1053]


def test_benchmark_runs_on_a_tiny_corpus(plan_scale: ModuleType,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    plan_scale.main(["--videos", "12", "--programs", "3", "--scenes", "40"])
    out = capsys.readouterr().out
    assert "corpus: 12 videos, 480 scenes" in out
    assert "baseline index_tables:" in out and "x baseline" in out and "peak RSS" in out
    assert "| Long (> 15 min) | Single-Needle |" in out
