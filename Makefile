# kassign: one command installs and runs the demo, one installs and runs every test.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: install demo test lint bench clean

# pip's and setuptools' output (the editable-install banner) goes to a log, shown only when the install fails.
# `install` and `demo` get kassign and what it runs on; the test tools (pytest, mypy, ruff, the test broker)
# only come with `make test`.
$(STAMP): pyproject.toml
	@echo "installing kassign into $(VENV) (log: $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@{ $(BIN)/pip install --quiet --upgrade pip && $(BIN)/pip install --quiet -e .; } \
		> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

$(TSTAMP): $(STAMP)
	@echo "installing the test tools into $(VENV) (log: $(VENV)/install-test.log)"
	@$(BIN)/pip install --quiet -e '.[test]' > $(VENV)/install-test.log 2>&1 \
		|| { cat $(VENV)/install-test.log; exit 1; }
	@touch $(TSTAMP)

install: $(STAMP)  ## create .venv and install kassign (runtime dependencies only)

demo: $(STAMP)  ## the main job on a bundled example: a Spark sweep of every assignor against the optimum
	$(BIN)/kassign sweep examples/sweep-small.yaml --out out/sweep-small --master 'local[2]'

test: $(TSTAMP)  ## lint, types, the Java modules (Kafka's jars from Maven Central), then every test
	$(BIN)/ruff check .
	$(BIN)/mypy solver heuristics spark_runner
	cd java && mvn -B -q package -DskipTests
	$(BIN)/python -m pytest

lint: $(TSTAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy solver heuristics spark_runner

bench: $(TSTAMP)  ## benchmarks (not part of the tests); results go to docs/benchmarks.md by hand
	@ls benchmarks/bench_*.py | sed 's#/#.#; s#\.py$$##' | xargs -n1 $(BIN)/python -m

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
