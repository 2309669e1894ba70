# dpsum: the two commands of the README (`make test`, `make book`), plus `make lab` and `make clean`.
# Each target sets itself up on a machine that has only python3: it creates .venv when
# missing and installs the package with its test and book extras.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dpsum-installed
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg
CHAPTERS := $(wildcard book/*.ipynb)

.PHONY: test book lab clean setup bench

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,book]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest tests
ifneq ($(strip $(CHAPTERS)),)
	$(BIN)/python -m pytest $(NBVAL) book
else
	@echo "nbval: no chapter notebooks in book/ yet, nothing to validate"
endif
	$(BIN)/jupyter-book build . -W -n --keep-going

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

lab: $(STAMP)
	$(BIN)/python -m pip install --quiet jupyterlab
	$(BIN)/jupyter lab book

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis book/.ipynb_checkpoints
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
