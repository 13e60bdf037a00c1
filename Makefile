# The commands a newcomer needs: `make run`, `make setup` and `make test`. CI runs `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
SYS_STAMP := $(VENV)/.system-tools
INSTALLED := .venv-installed
INSTALLED_STAMP := $(INSTALLED)/.deps
BENCH_STAMP := $(VENV)/.bench-tools

# A recipe's prefix: `url` names a throwaway PostgreSQL cluster (tests/pg_cluster.sh), or the server
# LARKBOT_TEST_PG_URL already names; the cluster is removed however the recipe ends.
WITH_PG = pgdir=$$(mktemp -d); trap 'tests/pg_cluster.sh stop "$$pgdir"' EXIT; trap 'exit 130' INT TERM; \
	url=$${LARKBOT_TEST_PG_URL:-$$(tests/pg_cluster.sh start "$$pgdir")} \
	  || { echo "could not start the throwaway PostgreSQL cluster (tests/pg_cluster.sh)"; exit 1; };

.PHONY: run setup test installed bench soak lint fmt typecheck clean image-check web-vendor

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,postgres]'
	touch $(STAMP) $@

# Tests run the real binaries: fd (Debian's fd-find) for fd_find, bwrap (bubblewrap) for the
# shell's sandbox, redis-server for the cross-replica journal and leader lock, PostgreSQL for the
# replica stores, Chromium (with CJK fonts) for the browser tools and the web page, node/npm for
# the npm packages tests use (the AG-UI client, A2UI's schemas), Xvfb/xdotool/xclip for
# computer_use (xwd, from
# x11-apps, is its benchmark's screenshot baseline); rg comes
# from PyPI's ripgrep wheel. Missing ones are installed with apt when root, else named here.
# Checked again when this Makefile changes (a tool added to the list is then installed).
$(SYS_STAMP): Makefile | $(BIN)/python
	@missing=""; \
	command -v fd >/dev/null 2>&1 || command -v fdfind >/dev/null 2>&1 || missing="$$missing fd-find"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium fonts-noto-cjk"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	for t in Xvfb:xvfb xdotool:xdotool xclip:xclip xwd:x11-apps; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing system tools:$$missing (install them, e.g. apt-get install$$missing)"; exit 1; fi; \
	fi
	touch $@

run: $(STAMP)
	$(BIN)/larkbot serve

# One scan with the Lark / Feishu app creates the bot's Lark app (README: Setup).
setup: $(STAMP)
	$(BIN)/larkbot setup

# The web page's third-party ES modules are committed (users need no build step); this
# re-fetches DOMPurify and marked from npm at the pinned versions, and rebuilds the official
# A2UI Lit renderer (web-vendor/package-lock.json pins it and Lit, Zod...) into one ES module
# with esbuild, each with its licence files.
DOMPURIFY_VERSION := 3.4.18
MARKED_VERSION := 18.2.1
WEB_VENDOR := larkbot/web/static/vendor
web-vendor:
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd "$$tmp" && npm pack --silent dompurify@$(DOMPURIFY_VERSION) marked@$(MARKED_VERSION) >/dev/null \
	  && mkdir d m && tar xzf dompurify-*.tgz -C d && tar xzf marked-*.tgz -C m) \
	&& sed '/sourceMappingURL/d' "$$tmp/d/package/dist/purify.es.mjs" > $(WEB_VENDOR)/purify.es.mjs \
	&& sed '/sourceMappingURL/d' "$$tmp/m/package/lib/marked.esm.js" > $(WEB_VENDOR)/marked.esm.js \
	&& cp "$$tmp/d/package/LICENSE" $(WEB_VENDOR)/LICENSE.dompurify \
	&& cp "$$tmp/m/package/LICENSE" $(WEB_VENDOR)/LICENSE.marked
	cd web-vendor && npm ci --silent --no-audit --no-fund --ignore-scripts \
	  && node_modules/.bin/esbuild a2ui-lit-entry.js --bundle --format=esm --minify \
	    --legal-comments=eof --metafile=node_modules/.a2ui-lit-meta.json \
	    --outfile=../$(WEB_VENDOR)/a2ui-lit.js \
	  && node licences.mjs node_modules/.a2ui-lit-meta.json > ../$(WEB_VENDOR)/LICENSE.a2ui-lit

# The product as users install it: the wheel in its own virtualenv, WITHOUT the dev extras
# (tests/test_installed_product.py runs `serve` from it). The virtualenv is made afresh when
# pyproject.toml changes (a dropped dependency must disappear too); otherwise only the new
# wheel is reinstalled, which takes seconds.
$(INSTALLED_STAMP): pyproject.toml | $(DEV_STAMP)
	rm -rf $(INSTALLED) && $(PYTHON) -m venv $(INSTALLED)
	rm -rf build/wheel && $(BIN)/pip wheel -q --no-deps --no-build-isolation -w build/wheel .
	$(INSTALLED)/bin/pip install -q build/wheel/larkbot-*.whl
	touch $@

installed: $(INSTALLED_STAMP)
	rm -rf build/wheel && $(BIN)/pip wheel -q --no-deps --no-build-isolation -w build/wheel .
	$(INSTALLED)/bin/pip install -q --no-deps --force-reinstall build/wheel/larkbot-*.whl
	$(INSTALLED)/bin/pip check -q

# tests/package.json: the official AG-UI client and A2UI's JSON Schemas the tests check against.
NPM_STAMP := tests/node_modules/.installed
$(NPM_STAMP): tests/package-lock.json | $(SYS_STAMP)
	cd tests && npm ci --silent --no-audit --no-fund --ignore-scripts && touch node_modules/.installed

# pytest gets a throwaway PostgreSQL cluster (tests/pg_cluster.sh), removed however it ends.
# One worker per core (at most 4), a test file per worker: 3 m 38 s instead of 5 m 49 s
# serially on 2 idle cores; every fixture starts its own servers on free ports, so they share.
# The installed product's virtualenv is built (mostly downloads) while lint and mypy (CPU) run.
test: $(DEV_STAMP) $(SYS_STAMP) $(NPM_STAMP)
	@mkdir -p build; $(MAKE) -s installed > build/installed.log 2>&1 & inst=$$!; \
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy larkbot tools cards \
	  && $(BIN)/lint-imports --no-cache; rc=$$?; \
	wait $$inst || { cat build/installed.log; echo "building the installed product failed"; exit 1; }; \
	exit $$rc
	$(WITH_PG) \
	LARKBOT_TEST_PG_URL="$$url" LARKBOT_INSTALLED_BIN="$(CURDIR)/$(INSTALLED)/bin/larkbot" \
	  PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:randomly -n auto --maxprocesses 4 --dist loadfile; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# `make bench` only: scrot and ImageMagick's import, computer_use's screenshot baselines (they
# pull ghostscript's libraries, ~25 packages, so tests do not need them). Skipped when not root.
$(BENCH_STAMP): | $(BIN)/python
	@missing=""; for t in scrot:scrot import:imagemagick; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing (benchmark baselines):$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "benchmark baselines not installed:$$missing (measured only when present)"; fi; \
	fi
	touch $@

# PostgreSQL's figures (webhook claims, leases, approvals) come from a throwaway cluster, as in
# `make test`.
bench: $(DEV_STAMP) $(SYS_STAMP) $(BENCH_STAMP)
	$(WITH_PG) \
	LARKBOT_TEST_PG_URL="$$url" PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m bench $(BENCH)

# Three `larkbot serve` replicas on a throwaway PostgreSQL and Redis (bench/soak.py): 2,000
# events, some sent 4x at once, a replica kill -9-ed mid-turn, Redis restarted, scheduled jobs
# ticking; prints the counts and latencies and fails when a message is lost or answered twice.
soak: $(DEV_STAMP) $(SYS_STAMP)
	$(WITH_PG) \
	LARKBOT_TEST_PG_URL="$$url" PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m bench.soak

# The Dockerfile's steps without Docker (wheel, clean venv, uid 10001, fresh LARKBOT_HOME).
image-check:
	deploy/image-check.sh

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy larkbot tools cards
	$(BIN)/lint-imports --no-cache

fmt: $(DEV_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) $(INSTALLED) build *.egg-info
