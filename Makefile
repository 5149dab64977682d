# privacy-gate: two commands — `make demo` and `make test`. Both bootstrap .venv on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
WHEELS ?= /opt/wheels
STAMP := $(VENV)/.installed
export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := true
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PYTHONDONTWRITEBYTECODE :=

.PHONY: demo test install clean ui

install: $(STAMP)

# uv if present (or installable into the venv), else plain pip. The local CPU torch wheel in
# $(WHEELS) is preferred so no CUDA packages get pulled in.
$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	@if command -v uv >/dev/null 2>&1; then UV=uv; \
	 elif $(BIN)/python -m pip install -q uv >/dev/null 2>&1; then UV=$(BIN)/uv; else UV=; fi; \
	 LINKS=""; if [ -d "$(WHEELS)" ] && ls $(WHEELS)/torch-2.13.0* >/dev/null 2>&1; then LINKS="--find-links $(WHEELS)"; CONS="-c constraints.txt"; else CONS=""; fi; \
	 echo "[install] installer=$${UV:-pip} $${LINKS}"; \
	 if [ -n "$$UV" ]; then \
	   $$UV pip install --python $(BIN)/python --compile-bytecode $$LINKS $$CONS -e '.[dev]'; \
	 else \
	   $(BIN)/python -m pip install -q $$LINKS $$CONS -e '.[dev]'; \
	 fi
	@touch $(STAMP)

demo: install
	$(BIN)/privacy-gate run examples/adult.yaml --workdir .privacy-gate

# Two pytest-xdist workers (CI machines have 2 cores; PYTEST_WORKERS=0 runs in one process).
# --dist loadgroup: the tests that start servers or many processes run on one worker, one after
# another (tests/conftest.py: SERIAL_MODULES), tests sharing a module-scoped run stay together.
PYTEST_WORKERS ?= 2
test: install
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=10

ui:
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/.privacy-gate/mlflow.db --workers 1 --host 127.0.0.1 --port 5000

clean:
	rm -rf $(VENV) .privacy-gate .pytest_cache
