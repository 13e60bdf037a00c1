# The two commands a newcomer needs: `make run` and `make test`. CI runs `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
SYS_STAMP := $(VENV)/.system-tools

.PHONY: run test bench lint fmt typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP) $@

# fd (Debian's fd-find) is needed by fd_find's tests; rg comes from PyPI's ripgrep wheel.
$(SYS_STAMP): | $(BIN)/python
	@if ! command -v fd >/dev/null 2>&1 && ! command -v fdfind >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fd-find >/dev/null; \
	  else echo "fd is missing: install fd-find (Debian/Ubuntu) or fd"; exit 1; fi; \
	fi
	touch $@

run: $(STAMP)
	$(BIN)/larkbot serve

test: $(DEV_STAMP) $(SYS_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy larkbot tools cards
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:randomly; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

bench: $(DEV_STAMP) $(SYS_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m bench

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy larkbot tools cards

fmt: $(DEV_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info
