"""Snapshot of every question text we write, so a phrasing change is a deliberate one.

The golden file holds each template rendered on a fixed description and the questions the
embedded describer writes for the shared corpus. After changing a template on purpose,
regenerate it with ``NEEDLEFORGE_UPDATE_GOLDEN=1 pytest tests/nemo/test_nemo_golden.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nemo_cases import corpus, params

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.backends.writer_prompts import (
    OBJECT_TEMPLATES,
    SCENE_TEMPLATES,
    TEMPLATES_VERSION,
)
from needleforge.nemo import generate

GOLDEN = Path(__file__).parent / "golden" / "question_texts.json"


def _snapshot() -> dict[str, Any]:
    result = generate(**corpus().kwargs(), params=params(seed=11),
                      describer=EmbeddedDescriber(seed=11), verifier=EmbeddedVerifier())
    return {
        "templates_version": TEMPLATES_VERSION,
        "object_templates": {tid: text.format(obj="the white cat on the left")
                             for tid, text in OBJECT_TEMPLATES},
        "scene_templates": {tid: text.format(scene="a scene with a white cat and two cups, "
                                                   "in a setting tagged brick wall and street")
                            for tid, text in SCENE_TEMPLATES},
        "corpus_questions": [
            {"target": q.target_object_id or q.target_scene_id, "needle_type": q.needle_type,
             "template_id": q.template_id, "description": q.description, "text": q.text}
            for q in result.questions
        ],
    }


def test_question_texts_match_the_golden_file() -> None:
    snapshot = _snapshot()
    if os.environ.get("NEEDLEFORGE_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    assert snapshot == json.loads(GOLDEN.read_text(encoding="utf-8")), (
        "question texts changed; if on purpose, regenerate with NEEDLEFORGE_UPDATE_GOLDEN=1")
