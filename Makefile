# One virtualenv per checkout; every target installs what it needs, so a
# fresh clone needs nothing but python3.11, git and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: demo test fuzz bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# compat editable mode puts the checkout on sys.path with a plain .pth file;
# the default mode installs an import hook that costs every Python process
# in the venv (each tool run included) about 20 ms at start-up.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e . --config-settings editable_mode=compat
	touch $@

$(TSTAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	touch $@

demo: $(STAMP)
	$(BIN)/acor list
	$(BIN)/acor hello agent
	$(BIN)/acor csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out
	@echo "--- a resumable run, stopped by a timeout, then resumed ---"
	@$(BIN)/acor sessions --clear demo-orders >/dev/null 2>&1 || true
	-$(BIN)/acor --timeout 1 csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out --session demo-orders --slow 0.3
	$(BIN)/acor csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out --session demo-orders

test: $(TSTAMP)
	$(BIN)/python -m pytest

fuzz: $(TSTAMP)
	ACOR_FUZZ_EXAMPLES=20000 $(BIN)/python -m pytest tests -k "property or fuzz" -p no:cacheprovider

# Byte-compile first: an installed package ships .pyc files, and this
# machine's PYTHONDONTWRITEBYTECODE would otherwise make every run compile.
bench: $(TSTAMP)
	$(BIN)/python -m compileall -q acor cli tools bench >/dev/null
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
