# The project's two commands: `make score` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
BUILD ?= build

.PHONY: setup score test clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "reteco needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

setup: $(STAMP)

# The main job on the built-in synthetic data: build a synthetic release, prepare
# reference data from it, score the starting kit's sample submissions.
score: $(STAMP)
	$(PY) -m reteco.demo --build $(BUILD)

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf $(BUILD) dist
