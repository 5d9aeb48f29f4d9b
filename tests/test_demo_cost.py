"""The demo's budget (``benchmarks/demo_cost.py``): as DVC's shell it runs each stage line and
logs its wall time, CPU seconds and peak RSS; its report prints them per stage with the CPU's
instruction-set level. Tried on tiny commands and a two-stage DVC project, never the demo."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "demo_cost.py"
#: A line that allocates and touches 64 MB, then fails with status 3.
HUNGRY = f"{sys.executable} -c 'b = bytearray(64 << 20); b[::4096] = b\"x\" * (64 << 8)'; exit 3"


@pytest.fixture(scope="module")
def demo_cost() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_cost_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _as_dvc_shell(line: str, *, stage: str, log: Path) -> int:
    """Run the script as DVC does: ``$SHELL -c LINE`` with ``DVC_STAGE`` set."""
    env = {**os.environ, "DVC_STAGE": stage, "NEEDLEFORGE_COST_LOG": str(log)}
    return subprocess.run([str(SCRIPT), "-c", line], env=env, check=False).returncode


def test_a_stage_line_is_run_and_logged_with_its_exit_status(tmp_path: Path) -> None:
    log = tmp_path / "cost.jsonl"
    assert _as_dvc_shell(HUNGRY, stage="hungry", log=log) == 3
    assert _as_dvc_shell(f"echo fine > {tmp_path / 'out.txt'}", stage="quick", log=log) == 0
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["stage"] == "hungry" and first["rc"] == 3
    assert first["max_rss_mb"] >= 64  # the child's peak, not this wrapper's
    assert first["user_s"] + first["sys_s"] > 0 and first["wall_s"] > 0
    assert second["stage"] == "quick" and second["rc"] == 0


def test_without_a_log_the_line_just_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NEEDLEFORGE_COST_LOG"}
    done = subprocess.run([str(SCRIPT), "-c", f"echo ran > {tmp_path / 'ran.txt'}"],
                          env=env, check=False)
    assert done.returncode == 0 and (tmp_path / "ran.txt").read_text() == "ran\n"
    assert list(tmp_path.iterdir()) == [tmp_path / "ran.txt"]


def test_the_report_sums_a_stages_lines_and_names_the_stages_not_run(
        demo_cost: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    log = tmp_path / "cost.jsonl"
    rows = [{"stage": "ingest", "wall_s": 2.0, "user_s": 1.5, "sys_s": 0.5,
             "max_rss_mb": 120.0, "rc": 0},
            {"stage": "evaluate", "wall_s": 10.0, "user_s": 15.0, "sys_s": 1.0,
             "max_rss_mb": 900.0, "rc": 0},
            {"stage": "evaluate", "wall_s": 1.0, "user_s": 0.5, "sys_s": 0.5,
             "max_rss_mb": 300.0, "rc": 0}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stages = demo_cost.read_log(log)
    assert [(s["stage"], s["wall_s"], s["max_rss_mb"]) for s in stages] == [
        ("ingest", 2.0, 120.0), ("evaluate", 11.0, 900.0)]
    cpu = demo_cost.cpu_info("processor : 0\nmodel name : Test CPU\nflags : fpu avx avx2\n"
                             "processor : 1\nmodel name : Test CPU\nflags : fpu avx avx2\n")
    text = demo_cost.report(stages, cpu=cpu, detector="OpenVINO 1.0 on CPU, f32",
                            expected=["studio", "ingest", "evaluate"])
    lines = text.splitlines()
    assert lines[0] == "demo budget on Test CPU (2 logical cores, instruction set AVX2: avx2)"
    assert lines[1] == "detector: OpenVINO 1.0 on CPU, f32"
    assert lines[5].split() == ["ingest", "2.0", "2.0", "1.00", "120"]
    assert lines[6].split() == ["evaluate", "11.0", "17.0", "1.55", "900"]
    assert lines[7].split() == ["total", "13.0", "19.0", "1.46", "900"]
    assert lines[8] == "not run (DVC found them up to date): studio"


@pytest.mark.parametrize(("flags", "level"), [
    ("sse4_2 avx", "below AVX2"),
    ("avx avx2 fma", "AVX2"),
    ("avx2 avx_vnni", "AVX2 + VNNI"),
    ("avx2 avx512f avx512bw", "AVX-512"),
    ("avx2 avx512f avx512_vnni avx_vnni", "AVX-512 + VNNI"),
    ("avx2 avx512f avx512_vnni amx_tile amx_int8", "AMX (AVX-512 + VNNI + AMX tiles)"),
])
def test_the_instruction_set_level(demo_cost: ModuleType, flags: str, level: str) -> None:
    assert demo_cost.isa_level(flags.split()) == level


def test_dvc_runs_every_stage_line_through_it(tmp_path: Path) -> None:
    """The mechanism ``make demo`` relies on: ``SHELL`` set to the script, ``dvc repro``
    logs each stage that runs under its own name, and none that DVC finds current."""
    dvc = shutil.which("dvc", path=str(Path(sys.executable).parent))
    if dvc is None:
        pytest.skip("dvc is not installed beside this Python")
    env = {**os.environ, "SHELL": str(SCRIPT), "NEEDLEFORGE_COST_LOG": str(tmp_path / "c.jsonl"),
           "DVC_NO_ANALYTICS": "1"}
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=tmp_path, env=env, check=True)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n"
        "  first:\n    cmd: echo one > one.txt\n    outs: [one.txt]\n"
        "  second:\n    cmd: cat one.txt > two.txt && echo two >> two.txt\n"
        "    deps: [one.txt]\n    outs: [two.txt]\n")
    for _ in range(2):  # the second run finds both stages current: nothing more is logged
        subprocess.run([dvc, "repro", "-q"], cwd=tmp_path, env=env, check=True)
    assert (tmp_path / "two.txt").read_text() == "one\ntwo\n"
    logged = [json.loads(line)["stage"] for line in (tmp_path / "c.jsonl").read_text()
              .splitlines()]
    assert logged == ["first", "second"]
    shown = subprocess.run([sys.executable, str(SCRIPT), "report", str(tmp_path / "c.jsonl"),
                            "--dvc-yaml", str(tmp_path / "dvc.yaml"), "--no-detector"],
                           capture_output=True, text=True, check=True).stdout
    assert [line.split()[0] for line in shown.splitlines()[5:]] == ["first", "second", "total"]


def test_the_report_says_when_the_detector_was_held_to_a_lower_level(
        demo_cost: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """An AVX2 budget measured on a wider CPU with oneDNN capped: the report says so, and
    that only the detector's runtime follows the cap."""
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    cpu = demo_cost.cpu_info("processor : 0\nmodel name : Test CPU\nflags : avx2 avx512f\n")
    lines = demo_cost.report([], cpu=cpu, detector="OpenVINO 1.0 on CPU, f32").splitlines()
    assert lines[2].startswith("ONEDNN_MAX_CPU_ISA=AVX2: OpenVINO's convolutions")
    assert "TFLite models" in lines[2] and lines[3].startswith("CPU s = user + sys")
