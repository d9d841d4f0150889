# One virtualenv per checkout; every target installs what it needs, so a
# fresh clone needs nothing but Python (3.11 or later), git and make.
# Another Python gets a venv of its own:
#   make test PYTHON=python3.13 VENV=.venv-3.13   (what .ci/run does)
#
# acor is installed as users get it: a regular (non-editable) install of this
# checkout, redone whenever a packaged file changes. Tests and benchmarks
# therefore exercise the installed package, package data included.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test
SOURCES := pyproject.toml $(shell find acor cli manifests -type f \
             \( -name '*.py' -o -name '*.json' -o -name '*.sh' -o -name '*.mjs' -o -name py.typed \) \
             -not -path '*/__pycache__/*' 2>/dev/null)

.PHONY: demo test test-lowest test-replicas lint fuzz bench conformance install dev dist clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(TSTAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet '.[test,tasks-postgres]'
	touch $@

# Dependencies come with the first install; later ones reinstall only acor.
# acor was once installed under the distribution name "acor" (now
# acor-cli): a venv made then still has it, and its files are acor's own.
$(STAMP): $(TSTAMP) $(SOURCES)
	$(BIN)/python -m pip uninstall --quiet --yes acor 2>/dev/null || true
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall .
	rm -rf build
	touch $@

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/acor list
	$(BIN)/acor hello agent
	$(BIN)/acor csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out
	@echo "--- a resumable run, stopped by a timeout, then resumed ---"
	@$(BIN)/acor sessions --clear demo-orders >/dev/null 2>&1 || true
	@# Exit 124 is this step's expected ending: anything else fails the demo.
	$(BIN)/acor --timeout 1 csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out --session demo-orders --slow 0.3 \
		|| { code=$$?; [ $$code -eq 124 ] || exit $$code; \
		     echo "--- exit 124, as meant: the timeout stopped it; now resumed ---"; }
	$(BIN)/acor csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out --session demo-orders

# The wheel and the sdist a release publishes, in dist/, checked by twine
# (which, with build, this target installs into the venv): publishing is
# then `twine upload dist/*`. Until acor-cli is on the package index, the
# wheel is how acor is installed elsewhere: pip install dist/acor_cli-*.whl
# (README, "Installing"). tests/project/test_install.py builds and installs one too.
dist: $(TSTAMP)
	$(BIN)/python -m pip install --quiet build twine
	rm -rf dist build
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
	rm -rf build

# The venv's pytest script, not `python -m pytest`: -m would put the
# checkout first on sys.path, where acor/ has no cli subpackage.
# Two xdist workers, one per core here: many tests wait on a tool process,
# but 4 workers measured no faster on 2 shared cores and cost more CPU.
# `make test TEST_WORKERS=auto` uses every core of a bigger machine.
# The replicas tests (two acor mcp --http on a real PostgreSQL) are left
# to `make test-replicas`: make test needs no database server.
TEST_WORKERS ?= 2
test: $(STAMP) lint
	$(BIN)/pytest -n $(TEST_WORKERS) -m "not replicas"

# The same suite against the lowest dependency versions pyproject.toml
# allows (.ci/constraints-lowest.txt), in a venv of its own: `make test`
# runs against the newest, which a fresh install picks. Together they keep
# a release upstream, or an old one a user still has, from breaking acor
# unseen. Each run's header names the versions it ran with.
LOW := .venv-lowest
$(LOW)/.installed: pyproject.toml .ci/constraints-lowest.txt $(SOURCES)
	rm -rf $(LOW)
	$(PYTHON) -m venv $(LOW)
	$(LOW)/bin/python -m pip install --quiet --upgrade pip
	$(LOW)/bin/python -m pip install --quiet -c .ci/constraints-lowest.txt '.[test,tasks-postgres]'
	rm -rf build
	touch $@

test-lowest: $(LOW)/.installed
	$(LOW)/bin/pytest -n $(TEST_WORKERS) -m "not replicas"

# Replicas of acor mcp --http sharing their tasks through the shared store
# (Procrastinate on PostgreSQL, the tasks-postgres extra, which the venv
# has): against ACOR_TEST_POSTGRES (a libpq URL) when set, else a server
# the tests start with initdb and pg_ctl. ACOR_REQUIRE_POSTGRES=1: a
# missing server fails them instead of skipping (what .ci/run runs).
test-replicas: $(STAMP)
	ACOR_REQUIRE_POSTGRES=1 $(BIN)/pytest -n 0 -m replicas

# Habits, checked on every test run: ruff on the library and the launcher,
# mypy --strict on the whole package as installed (library and launcher:
# every function annotated, no implicit Any), from a directory outside the
# checkout so that acor resolves to the install.
lint: $(STAMP)
	$(BIN)/ruff check acor cli
	cd $(VENV) && bin/mypy --config-file ../pyproject.toml \
		--cache-dir .mypy_cache --strict -p acor

# The properties and fuzzers at 20,000 examples each. One worker: at this
# budget hypothesis's record of what it tried grows to gigabytes in the
# biggest tests, and two at once could exhaust the machine. It takes over
# an hour here; FUZZ_EXAMPLES=2000 make fuzz is the quick pass.
FUZZ_EXAMPLES ?= 20000
fuzz: $(STAMP)
	ACOR_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest tests \
		-k "property or fuzz" -p no:cacheprovider

# Against the regular install above (bench/run.py refuses anything else);
# BENCH_QUICK=1 make bench is a smoke test with fewer rounds, not numbers.
# Byte-compile first: this machine's PYTHONDONTWRITEBYTECODE would otherwise
# make every run compile the bench's own modules.
bench: $(STAMP)
	$(BIN)/python -m compileall -q tools bench >/dev/null
	$(BIN)/python bench/run.py

# The official MCP conformance suite against `acor mcp --http`: installs
# the suite and Node 22 from npm under .conformance/ (the network, once),
# then runs every server scenario. Not in `make test`, which stays offline.
# docs/mcp.md lists each scenario and why any fails.
conformance: $(STAMP)
	$(BIN)/python tests/conformance/run.py

# For contributors: an editable install in a venv of its own (.venv-dev),
# so that an edit to acor/ or cli/ is live without reinstalling. `make
# test` keeps testing the regular install in .venv, as users get it.
DEV := .venv-dev
dev:
	test -x $(DEV)/bin/python || $(PYTHON) -m venv $(DEV)
	$(DEV)/bin/python -m pip install --quiet --upgrade pip
	$(DEV)/bin/python -m pip install --quiet -e '.[mcp,test]'
	@echo "editable install ready: $(DEV)/bin/acor, $(DEV)/bin/pytest"

clean:
	rm -rf $(VENV) .venv-3.13 $(LOW) $(DEV) build dist *.egg-info .pytest_cache .conformance
