# The two commands of the README:  `make run`  and  `make test`.
# Each creates the virtual environment it needs (.venv) on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# pytest-xdist workers for `make test`: one more than the cores, at most 4 (each runs its own Temporal dev
# server and stack); TEST_WORKERS=0 runs those tests in one process. The extra one keeps the cores busy
# while a test waits on a service, a timer or a Schedule (docs/testing.md).
TEST_WORKERS ?= $(shell n=$$(( $$(nproc 2>/dev/null || echo 2) + 1 )); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: run test lint revision docs sandbox-env browser

# Packages are installed by uv (from PyPI, into the venv first): it resolves and installs the same packages
# several times faster than pip. Where uv cannot be had or fails, pip installs them instead.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv || $(BIN)/pip install --quiet --upgrade pip

INSTALL = { [ -x $(BIN)/uv ] && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1); } || $(BIN)/pip install --quiet $(1)

# Bytecode ahead of time, for the packages and for our sources: where Python may not write it itself
# (PYTHONDONTWRITEBYTECODE, as in many containers and CI runners) every API, worker and test process would
# otherwise compile what it imports again, over a second of CPU at each start. Already compiled, the check
# takes well under a second; a file that does not compile is left to fail where it is imported.
BYTECODE = $(BIN)/python -m compileall -q -x '/\.[^/]' . >/dev/null || true; \
	$(BIN)/python -m compileall -q "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null || true

$(VENV)/.run-deps: pyproject.toml | $(BIN)/python
	$(call INSTALL,-e .)
	touch $@

$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(call INSTALL,-e ".[test]")
	touch $@

# The code sandbox (docs/code-sandbox.md). bubblewrap comes from apt where it is missing and we are root;
# otherwise one line says what to install (code_interpreter and shell answer an error until then). The
# sandbox's own Python environment, .venv-sandbox, holds the pinned packages of code_sandbox/requirements.txt;
# it is made from the system's Python where that is 3.11+ (under /usr, which the sandbox mounts anyway),
# else from $(PYTHON). Both steps do nothing when already done; builders (make, the tests) take turns on
# .venv-sandbox.lock, so a test waits for a build that `make test` started in the background (about 10 s
# with uv's cache warm).
SANDBOX_VENV := .venv-sandbox
SANDBOX_BASE_PYTHON ?= $(shell for p in /usr/bin/python3 $(PYTHON); do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v $$p; break; }; done)

sandbox-env: | $(BIN)/python
	@exec 9>$(SANDBOX_VENV).lock; flock 9; \
	command -v bwrap >/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing bubblewrap (the code sandbox) with apt-get"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
		else \
			echo "the code sandbox needs bubblewrap: install it (apt-get install bubblewrap, dnf install bubblewrap); until then code_interpreter and shell answer an error"; \
		fi; }; \
	[ $(SANDBOX_VENV)/.deps -nt code_sandbox/requirements.txt ] && exit 0; \
	echo "building $(SANDBOX_VENV) (the code sandbox's Python: numpy, pandas, matplotlib)"; \
	rm -rf $(SANDBOX_VENV); \
	{ [ -x $(BIN)/uv ] && $(BIN)/uv venv --quiet --python $(SANDBOX_BASE_PYTHON) $(SANDBOX_VENV) \
		&& $(BIN)/uv pip install --quiet --compile-bytecode --python $(SANDBOX_VENV)/bin/python -r code_sandbox/requirements.txt; } \
	|| { rm -rf $(SANDBOX_VENV) && $(SANDBOX_BASE_PYTHON) -m venv $(SANDBOX_VENV) \
		&& $(SANDBOX_VENV)/bin/pip install --quiet -r code_sandbox/requirements.txt; } \
	|| { echo "$(SANDBOX_VENV) could not be built"; exit 1; }; \
	touch $(SANDBOX_VENV)/.deps

# The console's browser tests (tests/inbox/test_console_browser.py) drive Debian's chromium through Playwright's
# Python package: chromium comes from apt where it is missing and we are root; no browser is ever downloaded
# by Playwright. Elsewhere one line says what to install, and those tests are skipped, saying why.
browser:
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing chromium (the console's browser tests) with apt-get"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "the console's browser tests need chromium: install it (apt-get install chromium); until then they are skipped"; \
		fi; }

run: $(VENV)/.run-deps sandbox-env
	@$(BYTECODE)
	$(BIN)/python serve.py

# ruff (style, errors), import-linter (the layers, no import circles, the shared API edge apart from the
# dialects: [tool.importlinter] in pyproject.toml) and mypy (types: [tool.mypy]).
LINT = $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports && $(BIN)/mypy

lint: $(VENV)/.test-deps
	$(LINT)

# docs/testing.md says how the suite runs and why so. Four things run side by side from the start: the lint;
# .venv-lsc (the current llama-stack-client, which needs Python >= 3.12: tests/support/client_venvs.py; its
# tests wait for it on a lock); the code sandbox's set-up (`sandbox-env`; tests/sandbox waits for it on its
# lock); and the tests marked `processes` (services of their own, killed on a
# timetable: mostly waiting, little computing) on PROCESS_WORKERS workers, in their own slices of ports
# (DA_TEST_PORT_SLICE_OFFSET, tests/support/stack.py). In the foreground, the rest of the suite on
# TEST_WORKERS workers, a file per worker at a time. Every part always runs; any failing fails `make test`;
# the `processes` part's and the lint's output are printed at the end.
PROCESS_WORKERS ?= 2
LINT_LOG := .lint.log
PROCESSES_LOG := .processes.log

test: $(VENV)/.test-deps browser
	@$(BYTECODE)
	@status=0; \
	( $(LINT) ) > $(LINT_LOG) 2>&1 & lint=$$!; \
	$(BIN)/python -m tests.support.client_venvs & venv_lsc=$$!; \
	$(MAKE) --no-print-directory sandbox-env & sandbox_env=$$!; \
	DA_TEST_PORT_SLICE_OFFSET=4 $(BIN)/pytest -m processes -n $(PROCESS_WORKERS) --dist loadfile \
		> $(PROCESSES_LOG) 2>&1 & processes=$$!; \
	$(BIN)/pytest -m "not processes" -n $(TEST_WORKERS) --dist loadfile || status=$$?; \
	wait $$venv_lsc || status=$$?; \
	wait $$sandbox_env || status=$$?; \
	wait $$processes || { status=1; echo "the processes tests failed:"; }; \
	cat $(PROCESSES_LOG); \
	wait $$lint || { status=1; echo "make lint failed:"; }; \
	cat $(LINT_LOG); \
	exit $$status

# docs/configuration.md's tables from the settings model (tests/test_docs.py fails while they differ).
docs: $(VENV)/.run-deps
	$(BIN)/python -m configuration.reference

# A new revision of the store's schema from a change to a `tables` module of store/: `make revision m="what changes"`.
# Autogenerate compares the tables with a scratch store at the newest revision; read what it wrote before committing.
REVISION_DB := .revision-scratch.db
NEXT_REVISION = $(shell printf '%04d' $$(( $$(ls store/migrations/versions/[0-9]*.py | wc -l) + 1 )))

revision: $(VENV)/.test-deps
	@test -n "$(m)" || { echo 'usage: make revision m="what the revision changes"'; exit 1; }
	rm -f $(REVISION_DB)
	DA_STORE_URL=sqlite+aiosqlite:///$(REVISION_DB) $(BIN)/python -m store.upgrade
	DA_STORE_URL=sqlite+aiosqlite:///$(REVISION_DB) $(BIN)/alembic revision --autogenerate --rev-id $(NEXT_REVISION) -m "$(m)"
	rm -f $(REVISION_DB)*
