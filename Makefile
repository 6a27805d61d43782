# kassign: one command installs and runs the demo, one installs and runs every test.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench clean

# pip's and setuptools' output (the editable-install banner) goes to a log, shown only when the install fails
$(STAMP): pyproject.toml
	@echo "installing kassign into $(VENV) (log: $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@{ $(BIN)/pip install --quiet --upgrade pip && $(BIN)/pip install --quiet -e '.[test]'; } \
		> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

install: $(STAMP)  ## create .venv and install kassign with its test tools

demo: $(STAMP)  ## the main job on a bundled example: a Spark sweep of every assignor against the optimum
	$(BIN)/kassign sweep examples/sweep-small.yaml --out out/sweep-small --master 'local[2]'

test: $(STAMP)  ## lint, types, then every test (unit, property, doctests, Spark, cluster)
	$(BIN)/ruff check .
	$(BIN)/mypy solver heuristics spark_runner
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy solver heuristics spark_runner

bench: $(STAMP)  ## benchmarks (not part of the tests); results go to docs/benchmarks.md by hand
	@ls benchmarks/bench_*.py | sed 's#/#.#; s#\.py$$##' | xargs -n1 $(BIN)/python -m

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
