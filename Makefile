# dpsum: the two commands of the README (`make test`, `make book`), plus `make lab` and `make clean`.
# Each target sets itself up on a machine that has only python3: it creates .venv when
# missing and installs the package with its test, book, dask and accounting extras (the dask extra
# lets `make test` run tests/test_dask.py on a local dask cluster).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dpsum-installed
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg
CHAPTERS := $(wildcard book/*.ipynb)
# fails when a built page loads a script or stylesheet from the network
OFFLINE_CHECK := $(BIN)/python tests/offline_html.py _build/html

.PHONY: test book lab clean setup bench

setup: $(STAMP)

$(STAMP): pyproject.toml book/helpers/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,book,dask,accounting]" -e book/helpers
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m mypy --config-file book/helpers/pyproject.toml book/helpers/dpsum_book
	$(BIN)/python -m pytest tests
	$(BIN)/python -m pytest --doctest-modules dpsum
ifneq ($(strip $(CHAPTERS)),)
	$(BIN)/python -m pytest $(NBVAL) book
else
	@echo "nbval: no chapter notebooks in book/ yet, nothing to validate"
endif
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(OFFLINE_CHECK)

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(OFFLINE_CHECK)
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# JupyterLab on the chapters, for a reader who wants to run them. It listens on
# 127.0.0.1 only, opens no browser (open the printed URL, token included), and
# starts as root too (containers). LAB_PORT is the first port tried; when it is
# taken, Jupyter tries the next ones. Stop it with Ctrl-C.
LAB_PORT ?= 8888
lab: $(STAMP)
	$(BIN)/jupyter-lab --version >/dev/null 2>&1 || $(BIN)/python -m pip install --quiet jupyterlab
	@echo "Starting JupyterLab on book/; open the http://127.0.0.1:...?token=... URL it prints below."
	$(BIN)/jupyter-lab --no-browser --allow-root --ip=127.0.0.1 --port=$(LAB_PORT) \
		--ServerApp.root_dir=book

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis book/.ipynb_checkpoints
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
