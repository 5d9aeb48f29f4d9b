"""Fixtures of the human verdict tests: the colour world (:mod:`tests.review.review_cases`),
made once per module, and a fresh copy of its store for each test to write into."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.review.review_cases import World, make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("world"))


@pytest.fixture
def db(world: World, tmp_path: Path) -> Path:
    copy = tmp_path / "store.duckdb"
    shutil.copy(world.db, copy)
    return copy
