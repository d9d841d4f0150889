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

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TSTAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(STAMP)
	$(BIN)/acor list
	$(BIN)/acor hello agent
	$(BIN)/acor csvprofile tools/csvprofile/sample/orders.csv --key order_id --out .acor/demo-out

test: $(TSTAMP)
	$(BIN)/python -m pytest

fuzz: $(TSTAMP)
	ACOR_FUZZ_EXAMPLES=20000 $(BIN)/python -m pytest tests -k "property or fuzz" -p no:cacheprovider

bench: $(TSTAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
