# privacy-gate: two commands — `make demo` and `make test`. Both bootstrap .venv on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
WHEELS ?= /opt/wheels
STAMP := $(VENV)/.installed
# The locked environment (every package of `.[dev]` and `.[production]`, pinned ==): `make install`
# installs with it as constraints on every machine; `make lock` re-resolves it from pyproject.toml.
LOCK := requirements.lock
# torch's CPU build (no CUDA packages): the local wheel in $(WHEELS) when present, else the
# PyTorch CPU index, else (that index unreachable) PyPI's build of the same version, with a warning
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_LOCKED = $(shell sed -n 's/^torch==\([^ ]*\).*/\1/p' $(LOCK))
TORCH_VERSION = $(shell sed -n 's/^ *"torch==\([^"]*\)".*/\1/p' pyproject.toml)
UPGRADE ?=
export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := true
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PYTHONDONTWRITEBYTECODE :=

.PHONY: demo test lint test-slow test-all install lock clean ui docs tables

install: $(STAMP)

# uv if present (or installable into the venv), else plain pip; always constrained by $(LOCK).
FIND_UV = if command -v uv >/dev/null 2>&1; then UV=uv; \
	 elif $(BIN)/python -m pip install -q uv >/dev/null 2>&1; then UV=$(BIN)/uv; else UV=; fi
# where torch's CPU build comes from: SRC="--find-links $(WHEELS)" when the wheel is there, else the
# PyTorch CPU index when it answers (uv then needs unsafe-best-match to take the other packages'
# pinned versions from PyPI: that index also carries copies of some of them), else SRC= (none)
TORCH_SOURCE = if ls $(WHEELS)/torch-$(1)-*.whl >/dev/null 2>&1; then SRC="--find-links $(WHEELS)"; \
	 elif python3 -c "import urllib.request as u; u.urlopen(u.Request('$(TORCH_CPU_INDEX)/', method='HEAD'), timeout=15)" 2>/dev/null; then \
	   SRC="--extra-index-url $(TORCH_CPU_INDEX)"; if [ -n "$$UV" ]; then SRC="$$SRC --index-strategy unsafe-best-match"; fi; \
	 else SRC=; fi

# Each step says what it is doing before it starts: on a fresh machine the install takes minutes,
# most of them downloading and unpacking, then about a minute compiling bytecode (done once, as
# its own step, so that later commands do not each compile what they import).
$(STAMP): pyproject.toml $(LOCK)
	@if ! test -x $(BIN)/python; then echo "[install] creating the virtual environment $(VENV) ($(PYTHON))"; \
	   $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV); fi
	@echo "[install] looking for uv and for torch's CPU build ($(WHEELS), else $(TORCH_CPU_INDEX))"; \
	 $(FIND_UV); $(call TORCH_SOURCE,$(TORCH_LOCKED)); CONS=$(LOCK); \
	 if [ -z "$$SRC" ]; then CONS=$(VENV)/requirements-pypi-torch.lock; \
	   echo "[install] WARNING: torch $(TORCH_LOCKED) is neither in $(WHEELS) nor on $(TORCH_CPU_INDEX) (unreachable):" \
	        "installing PyPI's torch $(TORCH_VERSION) instead (the CUDA build, large; the golden figures were" \
	        "computed with the CPU build, and tests/test_lock.py will say this venv differs from the lock)" >&2; \
	   sed 's/^torch==\([^+ ]*\)+[^ ]*/torch==\1/' $(LOCK) > $$CONS; fi; \
	 echo "[install] installing the $$(grep -c '^[A-Za-z0-9]' $(LOCK)) locked packages and privacy-gate (editable)" \
	      "with $${UV:-pip} $$SRC -c $$CONS: a few minutes on a fresh machine, seconds when up to date"; \
	 if [ -n "$$UV" ]; then $$UV pip install --python $(BIN)/python $$SRC -c $$CONS -e '.[dev]'; \
	 else $(BIN)/python -m pip install -q --no-compile $$SRC -c $$CONS -e '.[dev]'; fi
	@echo "[install] compiling the packages' bytecode (about a minute the first time; files already compiled are skipped)"
	@$(BIN)/python -c "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_path('purelib'), quiet=2, workers=0)"
	@touch $(STAMP)
	@echo "[install] $(VENV) matches $(LOCK)"

# Re-resolve $(LOCK) from pyproject.toml with uv (both extras, Python 3.11, linux x86_64, torch's
# CPU build), keeping its current pins where they still satisfy pyproject.toml. To move pins:
#   make lock UPGRADE=--upgrade                      # the newest versions pyproject.toml allows
#   make lock UPGRADE='--upgrade-package numpy'      # one package
# Then `make install` (the stamp depends on the lock) and `make test`: the golden figures are
# computed with the locked versions.
LOCK_COMPILE = uv pip compile pyproject.toml --extra dev --extra production --python-version 3.11 \
	--python-platform x86_64-unknown-linux-gnu -c <(echo torch==$(TORCH_VERSION)+cpu) $(UPGRADE)
lock:
	@command -v uv >/dev/null 2>&1 || test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	@$(FIND_UV); test -n "$$UV" || { echo "make lock needs uv (pip install uv)" >&2; exit 1; }; \
	 $(call TORCH_SOURCE,$(TORCH_VERSION)+cpu); test -n "$$SRC" || { echo "make lock: torch $(TORCH_VERSION)+cpu" \
	   "is neither in $(WHEELS) nor on $(TORCH_CPU_INDEX) (unreachable)" >&2; exit 1; }; \
	 TORCH_PIN=$$(mktemp); echo "torch==$(TORCH_VERSION)+cpu" > $$TORCH_PIN; \
	 $$UV pip compile pyproject.toml --extra dev --extra production --python-version 3.11 \
	   --python-platform x86_64-unknown-linux-gnu $$SRC -c $$TORCH_PIN $(UPGRADE) \
	   --no-header --annotation-style line -q -o $(LOCK) || { rm -f $$TORCH_PIN; exit 1; }; \
	 { echo "# The locked environment of privacy-gate: every package of pyproject.toml's dependencies and of"; \
	   echo "# its dev and production extras, pinned ==, for Python 3.11 on linux x86_64, torch as its CPU build."; \
	   echo "# \`make install\` installs with it as constraints (-c) on every machine. Do not edit by hand:"; \
	   echo "# written by \`make lock\` (see the Makefile), which runs (uv $$($$UV --version | cut -d' ' -f2)):"; \
	   echo "#   $(strip $(LOCK_COMPILE)) -o $(LOCK)"; \
	   echo "# (torch's CPU wheel from $(WHEELS) or $(TORCH_CPU_INDEX)), keeping the pins of this file where"; \
	   echo "# they still satisfy pyproject.toml; \`make lock UPGRADE=--upgrade\` moves them."; \
	   sed "s#-c $$TORCH_PIN#the torch CPU pin#" $(LOCK); } > $(LOCK).tmp && mv $(LOCK).tmp $(LOCK) && rm -f $$TORCH_PIN && \
	 echo "[lock] $(LOCK): $$(grep -c '^[A-Za-z0-9]' $(LOCK)) packages pinned"

demo: install
	@echo "[demo] privacy-gate run examples/adult.yaml --workdir .privacy-gate: the release flow on the bundled Adult data (progress below, then the verdict)"
	@$(BIN)/privacy-gate run examples/adult.yaml --workdir .privacy-gate

# Two pytest-xdist workers (CI machines have 2 cores; PYTEST_WORKERS=0 runs in one process).
# --dist loadgroup: tests sharing a module-scoped run stay together on one worker, the tests that
# start servers or many processes run one after another (tests/conftest.py: SERIAL_MODULES), and
# the longest work units start first (UNIT_SECONDS there).
# Two tiers (tests/conftest.py: SLOW_TIER names each slow module and why it cannot be fast):
# `make test` runs every other test; `make test-slow` runs the slow tier; `make test-all` both.
# CI (.ci/run) runs `make test` within its 15 minutes; `.ci/run --all` runs both tiers.
PYTEST_WORKERS ?= 2
PYTEST = $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=10
# The static checks first (seconds; a failure stops `make test` before pytest): lint, format, types.
lint: install
	@echo "[lint] ruff check (pyproject.toml [tool.ruff]: pycodestyle, pyflakes, isort, bugbear, pyupgrade)"
	@$(BIN)/ruff check .
	@echo "[lint] ruff format --check (the layout ruff format writes, 100 columns)"
	@$(BIN)/ruff format --check .
	@echo "[lint] mypy (pyproject.toml [tool.mypy]: the files it lists)"
	@$(BIN)/mypy

test: install lint
	$(PYTEST) -m "not slow"

test-slow: install
	$(PYTEST) -m slow

test-all: install
	$(PYTEST)

# The documentation site (mkdocs.yml, pages in docs/) into site/, every warning an error (a broken
# link or #anchor included); `make test` builds it too (tests/test_docs_site.py). NO_MKDOCS_2_WARNING
# silences the theme's end-of-life banner (a notice printed at start-up, not a build warning).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Rewrite the tables of the docs and README that restate benchmarks/results/*.json (between
# <!-- table:NAME --> markers) from the JSON; tests/test_docs_site.py fails when one has drifted.
tables: install
	$(BIN)/python benchmarks/tables.py --write

ui:
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/.privacy-gate/mlflow.db --workers 1 --host 127.0.0.1 --port 5000

clean:
	rm -rf $(VENV) .privacy-gate .pytest_cache site
