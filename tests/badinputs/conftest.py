"""The bad-input corpus, built once per session (see ``corpus.py`` for how each file is made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.badinputs.corpus import build_corpus


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<base>/lib``: the manifest folder holding every corpus file; ``<base>/outside``
    holds what path-escape cases point at."""
    base = tmp_path_factory.mktemp("badinputs")
    (base / "lib").mkdir()
    (base / "outside").mkdir()
    return build_corpus(base / "lib", base / "outside")
