"""VNBench (VideoNIAH, seed 000): synthetic needles in video haystacks, 9 subtasks, Long, Act.

Entry point: :func:`~needleforge.vnbench.stage.build_vnbench`. Modules, by noun: ``plan``
(haystacks, needle positions), ``subtasks`` (what each subtask plants), ``compose`` (one
sample), ``questions`` (wording, options, rules), ``names`` / ``assets`` / ``clips`` (needle
content), ``text`` (drawtext), ``frames`` (cached-clip seconds), ``render`` (edited and
inserted pieces joined by stream copy), ``filter`` (similarity filter), ``export`` (scorer
records and VNBench JSON), ``records`` (value types).
"""

from needleforge.vnbench.export import (
    all_records,
    choice_records,
    suite_of,
    vnbench_entry,
    vnbench_records,
    write_jsonl,
    write_vnbench_json,
)
from needleforge.vnbench.records import (
    Haystack,
    Needle,
    NeedleRegion,
    VNBenchError,
    VNBenchResult,
    VNBenchSample,
    VNBenchSkip,
)
from needleforge.vnbench.stage import build_vnbench

__all__ = [
    "Haystack",
    "Needle",
    "NeedleRegion",
    "VNBenchError",
    "VNBenchResult",
    "VNBenchSample",
    "VNBenchSkip",
    "all_records",
    "build_vnbench",
    "choice_records",
    "suite_of",
    "vnbench_entry",
    "vnbench_records",
    "write_jsonl",
    "write_vnbench_json",
]
