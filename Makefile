# Canary Gate developer tasks. `make install && make test` is the whole set-up.
.DEFAULT_GOAL := help
.PHONY: help install lint test bench compose-check scan-examples

VENV ?= .venv
# The venv's interpreter when there is one, else the system python3.
PYTHON ?= $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k quorum -x"`.
PYTEST_ARGS ?=
# The speed set; each prints TARGET lines (figure beside target). bench_gates needs Redis and Postgres.
BENCHMARKS := benchmarks/bench_precheck.py benchmarks/bench_ensemble.py benchmarks/bench_gates.py
# Compose refuses to render without these two secrets; the check only needs placeholders.
COMPOSE_CHECK_ENV := FLOWER_BASIC_AUTH=check:check MINIO_KMS_SECRET_KEY=check-key:placeholder

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

install: ## create .venv and install the package with its test extras (editable)
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check -q -e ".[test]"

lint: ## ruff lint, ruff format check, mypy --strict on every package (pyproject.toml)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy worker producers policies

test: ## run the test suite
	$(PYTHON) -m pytest -q $(PYTEST_ARGS)

bench: ## the speed set: pre-check, local ensemble, coordination (benchmarks/README.md)
	@for script in $(BENCHMARKS); do echo "== $$script"; $(PYTHON) $$script || exit $$?; done

compose-check: ## validate docker-compose.yml without a Docker engine
	$(COMPOSE_CHECK_ENV) docker-compose -f docker-compose.yml config -q

scan-examples: ## scan the example artifacts under policies/examples
	$(if $(wildcard $(VENV)/bin/canary),$(VENV)/bin/canary,canary) scan -p malicious-package -p prompt-injection policies/examples/packages/
