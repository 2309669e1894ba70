# dpsum: the two commands of the README (`make test`, `make book`), plus `make lab` and `make clean`.
# Each target sets itself up on a machine that has only python3: it creates .venv when
# missing and installs what its job needs, with numpy, scipy, matplotlib and sympy pinned
# by constraints.txt: `make book` the package with its docs extra (the HTML build only);
# `make test` the test, book, dask, accounting and fast extras (the dask extra lets
# tests/test_dask.py run on a local dask cluster); `make lab` the book extra (what the
# chapters import) and the pinned JupyterLab of the lab extra.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# one stamp per job: the book's needs, the tests' (a superset), JupyterLab's
BOOK_STAMP := $(VENV)/.dpsum-book
STAMP      := $(VENV)/.dpsum-installed
LAB_STAMP  := $(VENV)/.dpsum-lab
# numpy, scipy, matplotlib, sympy pinned to the versions of the stored outputs
CONSTRAINTS := -c constraints.txt
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg
CHAPTERS := $(wildcard book/*.ipynb)
# fails when a built page loads a script or stylesheet from the network
OFFLINE_CHECK := $(BIN)/python tests/offline_html.py _build/html

.PHONY: test book lab clean setup bench pdf tex constraints

setup: $(STAMP)

$(VENV)/.dpsum-venv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	touch $@

# make test: the package with its test, book, dask, accounting and fast (numba) extras
$(STAMP): pyproject.toml book/helpers/pyproject.toml constraints.txt $(VENV)/.dpsum-venv
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) -e ".[test,book,dask,accounting,fast]" \
		-e book/helpers
	touch $(STAMP) $(BOOK_STAMP)

# make book: only what the HTML build needs (the package and its docs extra: the
# stored outputs are rendered, not executed)
$(BOOK_STAMP): pyproject.toml constraints.txt $(VENV)/.dpsum-venv
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) -e ".[docs]"
	touch $(BOOK_STAMP)

# make lab: what running the chapters needs, and the pinned JupyterLab
$(LAB_STAMP): pyproject.toml book/helpers/pyproject.toml constraints.txt $(VENV)/.dpsum-venv
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) -e ".[book,lab]" -e book/helpers
	touch $(LAB_STAMP)

test: $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m mypy --config-file book/helpers/pyproject.toml book/helpers/dpsum_book
	$(BIN)/lint-imports
	$(BIN)/python -m pytest tests
	$(BIN)/python -m pytest --doctest-modules dpsum
ifneq ($(strip $(CHAPTERS)),)
	$(BIN)/python -m pytest $(NBVAL) book
else
	@echo "nbval: no chapter notebooks in book/ yet, nothing to validate"
endif
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(OFFLINE_CHECK)

book: $(BOOK_STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(OFFLINE_CHECK)
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# Upgrade the pinned numerical stack: the newest numpy, scipy, matplotlib and
# sympy into constraints.txt. Then re-execute every chapter (README,
# "Re-executing notebooks"), run make test and review the outputs' diff.
constraints: $(VENV)/.dpsum-venv
	$(BIN)/python -m pip install --quiet --upgrade numpy scipy matplotlib sympy
	{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze \
		| grep -iE '^(numpy|scipy|matplotlib|sympy)=='; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	@cat constraints.txt

# JupyterLab on the chapters, for a reader who wants to run them. It listens on
# 127.0.0.1 only, opens no browser (open the printed URL, token included), and
# starts as root too (containers). LAB_PORT is the first port tried; when it is
# taken, Jupyter tries the next ones. Stop it with Ctrl-C.
LAB_PORT ?= 8888
lab: $(LAB_STAMP)
	@echo "Starting JupyterLab on book/; open the http://127.0.0.1:...?token=... URL it prints below."
	$(BIN)/jupyter-lab --no-browser --allow-root --ip=127.0.0.1 --port=$(LAB_PORT) \
		--ServerApp.root_dir=book

# make pdf: the whole book as one PDF, through Jupyter Book's LaTeX builder (which
# runs xelatex: the sphinx-jupyterbook-latex extension chooses it). `tex` installs
# TeX from Debian's archive when a package is missing and does nothing otherwise;
# it needs root (or sudo). The check fails on LaTeX errors, missing figures,
# undefined references and characters missing from the fonts.
TEX_PACKAGES := texlive-xetex texlive-latex-recommended texlive-latex-extra \
	texlive-fonts-recommended texlive-pictures latexmk fonts-freefont-otf fonts-lmodern
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)
PDF_LOG := _build/latex/dpsum.log
# Sphinx's options for the LaTeX build: warnings are errors, as in make book
PDF_SPHINXOPTS ?= -W -n --keep-going
tex:
	@if dpkg-query -W -f='$${Status}\n' $(TEX_PACKAGES) 2>/dev/null \
		| grep -c '^install ok installed$$' | grep -qx $(words $(TEX_PACKAGES)); then \
		echo "TeX: the $(words $(TEX_PACKAGES)) Debian packages are installed"; \
	elif ! command -v apt-get >/dev/null && command -v xelatex >/dev/null \
		&& command -v latexmk >/dev/null; then \
		echo "TeX: no apt-get; using the xelatex and latexmk found on PATH"; \
	else \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends $(TEX_PACKAGES); \
	fi

pdf: $(BOOK_STAMP) tex
	rm -f $(PDF_LOG)
	max_print_line=10000 LATEXMKOPTS="-silent -halt-on-error" \
		$(BIN)/jupyter-book build . --builder pdflatex $(PDF_SPHINXOPTS) \
		|| { test ! -f $(PDF_LOG) || $(BIN)/python tests/latex_log.py $(PDF_LOG); exit 1; }
	$(BIN)/python tests/latex_log.py $(PDF_LOG)
	@echo "The PDF is at $(CURDIR)/_build/latex/dpsum.pdf (make book links it from the HTML book)"

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	for b in benchmarks/*.py; do \
	  case $$b in *plan_comparison.py|*private_mean.py) if [ -z "$$PLAN_EXPERIMENTS" ]; then \
	    echo "skipping $$b: set PLAN_EXPERIMENTS to a checkout of ChristianLebeda/PLAN-experiments"; \
	    continue; fi;; esac; \
	  $(BIN)/python $$b || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis book/.ipynb_checkpoints
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
