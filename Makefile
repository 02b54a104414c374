# Everyday commands. `make serve` and `make test` set up their own
# environments on first use (.venv-docs: docs only; .venv: the test suite).
PYTHON ?= python3
DOCS_VENV := .venv-docs
TEST_VENV := .venv

# Pulled in by the Jupyter stack (jupyter-events asks jsonschema for its
# format checkers) and used by nothing here: when it is installed, jsonschema
# builds its IRI grammar on import, 2.5 s of CPU in every process that loads
# nbformat (each site build, notebook run and test worker).
UNUSED := rfc3987-syntax

.PHONY: serve build test lint notebooks gpu stale clean

$(DOCS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install -q --upgrade pip
	$(DOCS_VENV)/bin/pip install -q -e '.[docs]'
	$(DOCS_VENV)/bin/pip uninstall -q -y $(UNUSED)
	touch $@

$(TEST_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(TEST_VENV)
	$(TEST_VENV)/bin/pip install -q --upgrade pip
	$(TEST_VENV)/bin/pip install -q -e '.[test]'
	$(TEST_VENV)/bin/pip uninstall -q -y $(UNUSED)
	touch $@

## serve: preview the site on http://127.0.0.1:8000 (no torch, triton or GPU needed)
serve: $(DOCS_VENV)/.installed
	$(DOCS_VENV)/bin/mkdocs serve -a 127.0.0.1:8000

## build: build the site into site/, failing on any warning
build: $(DOCS_VENV)/.installed
	$(DOCS_VENV)/bin/mkdocs build --strict

## test: the whole CPU test suite (kernels under TRITON_INTERPRET=1, site, notebooks, browser)
test: $(TEST_VENV)/.installed
	scripts/ensure-chromium
	$(TEST_VENV)/bin/python -m pytest -n auto --dist loadfile

## lint: ruff lint and format check
lint: $(TEST_VENV)/.installed
	$(TEST_VENV)/bin/ruff check . && $(TEST_VENV)/bin/ruff format --check .

## notebooks: rebuild docs/notebooks/*.ipynb from notebooks/*.md and the snippets
notebooks: $(TEST_VENV)/.installed
	$(TEST_VENV)/bin/python -m triton_course.notebooks build

## gpu: on a CUDA machine, check, time and publish every kernel and notebook
gpu:
	$(PYTHON) -m triton_course.runner run

## stale: list timing tables whose kernel changed since it was measured, or never was
stale:
	$(PYTHON) -m triton_course.runner stale

clean:
	rm -rf site .pytest_cache
