# `make run` serves the app on http://localhost:8501 (offline by default);
# `make test` runs every test, in three processes (pytest-xdist); `make test-fast` the tests that need no browser,
# database, balancer or npm client. Each sets up .venv on a fresh machine first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
NPM_CLIENTS := tests/npm/node_modules/.installed

.PHONY: run test test-fast chromium bubblewrap haproxy postgresql jq npm bench bench-long clean messages samples class

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The venv also finds Loopscope itself (a .pth file naming this folder), so its python runs `-m loop` from any
# folder: `~/loopscope/.venv/bin/python -m loop record -- COMMAND` in the project whose agent is recorded.
$(VENV)/.app: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install -q -r requirements.txt
	echo "$(CURDIR)" > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/loopscope.pth"
	touch $@

$(VENV)/.test: requirements-test.txt $(VENV)/.app
	$(BIN)/python -m pip install -q -r requirements-test.txt
	touch $@

run: $(VENV)/.app bubblewrap
	$(BIN)/streamlit run app.py --server.port $(PORT) --server.headless true

# Commands run under Debian's bubblewrap (docs/security.md): install it when it is missing and we can.
# Without it they still run, with weaker isolation, and the page and the CLI say so.
bubblewrap:
	@if command -v bwrap >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's bubblewrap for the sandbox…"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap) >/tmp/loopscope-apt-bwrap.log 2>&1 \
		|| { echo "could not install bubblewrap (see /tmp/loopscope-apt-bwrap.log)"; exit 1; }; \
	else \
		echo "bubblewrap is missing: commands will run without it (install it with: sudo apt-get install -y bubblewrap)"; \
	fi

# The browser tests drive Debian's chromium: install it when it is missing and we can.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests…"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-noto-cjk) >/tmp/loopscope-apt.log 2>&1 \
		|| { echo "could not install chromium (see /tmp/loopscope-apt.log)"; exit 1; }; \
	else \
		echo "The browser tests need /usr/bin/chromium. Install it with: sudo apt-get install -y chromium"; exit 1; \
	fi

# Three processes on two cores: many tests wait (for a server, a sandboxed command, a killed replica), and with
# two the cores stood idle 15% of the run; with three, 4%. Each process takes a whole file at a time, the dearest
# files first (tests/conftest.py's DEAREST; pytest-xdist would otherwise hand out the files with most tests first):
# a file's servers and pages start once, and no process is left alone with a long file at the end (`.venv/bin/python
# bench/suite.py` prints each file's core-seconds and wall seconds: 714 core-seconds, 400 s on an idle machine).
# Python may write its bytecode (__pycache__, ignored by git) even where the machine says not to: the tests start
# many Python processes (servers, the command line, each upload's import), and each would otherwise compile
# Loopscope's modules again.
test: $(VENV)/.test chromium bubblewrap haproxy postgresql jq $(NPM_CLIENTS)
	env -u PYTHONDONTWRITEBYTECODE -u LOOPSCOPE_SEARCHES -u LOOPSCOPE_CASES $(BIN)/python -m pytest -q -n 3 \
		--dist loadfile --no-loadscope-reorder

# The real agents the tests record (`python -m loop record`): Claude Code at the version tests/npm pins, installed
# by npm from its lockfile (tests/npm/node_modules, ignored by git); a run that can leave them out says -m "not npm".
$(NPM_CLIENTS): tests/npm/package.json tests/npm/package-lock.json | npm
	cd tests/npm && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# npm, for the clients above: install Debian's nodejs and npm when missing and we can.
npm:
	@if command -v npm >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's nodejs and npm for the recorded clients' tests…"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm) >/tmp/loopscope-apt-npm.log 2>&1 \
		|| { echo "could not install npm (see /tmp/loopscope-apt-npm.log)"; exit 1; }; \
	else \
		echo "A test records Claude Code, installed with npm. Install it with: sudo apt-get install -y nodejs npm"; exit 1; \
	fi

# The tests for working between full runs: each test is marked by what it uses (tests/tiers.py), and this leaves
# out Chromium, PostgreSQL, HAProxy's replicas and clients installed from npm. `pytest -m browser` (or postgres,
# replicas, sandbox, npm) runs one tier. Every test runs, each Hypothesis search on a quarter of its cases and each
# parametrized test on two fifths of its own, drawn anew each time (tests/searches.py): the seed is printed, and
# `make test-fast LOOPSCOPE_CASES_SEED=N` draws the same again. Four processes, not three: with three, two waiting
# at once (for a command's timeout, a class's heartbeat) left a core idle for about 40 core-seconds a run; with
# four, about 10 (/proc/stat).
FAST := not browser and not postgres and not replicas and not npm
LOOPSCOPE_CASES_SEED ?= $(shell date +%s)
# (read once, here: the seed printed is the seed the tests draw with)
LOOPSCOPE_CASES_SEED := $(LOOPSCOPE_CASES_SEED)
test-fast: $(VENV)/.test bubblewrap jq
	@echo "make test-fast: two fifths of each parametrized test's cases, drawn with LOOPSCOPE_CASES_SEED=$(LOOPSCOPE_CASES_SEED) (make test runs every case)"
	env -u PYTHONDONTWRITEBYTECODE LOOPSCOPE_SEARCHES=0.25 LOOPSCOPE_CASES=0.4 \
		LOOPSCOPE_CASES_SEED=$(LOOPSCOPE_CASES_SEED) $(BIN)/python -m pytest -q -n 4 --dist loadfile \
		--no-loadscope-reorder -m "$(FAST)"

# A run's journal (one JSON line a step) is read with jq in the README and in a test: install it when missing.
jq:
	@if command -v jq >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's jq for the journal's test…"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q jq) >/tmp/loopscope-apt-jq.log 2>&1 \
		|| { echo "could not install jq (see /tmp/loopscope-apt-jq.log)"; exit 1; }; \
	else \
		echo "A test reads a journal with jq. Install it with: sudo apt-get install -y jq"; exit 1; \
	fi

# Benchmarks print figures; they are run by hand, not by `make test`.
bench: $(VENV)/.test chromium bubblewrap
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/replay.py
	$(BIN)/python bench/render.py
	$(BIN)/python bench/yours.py
	$(BIN)/python bench/watching.py

bench-long: $(VENV)/.test chromium
	$(BIN)/python bench/fuzz.py --cases 10000
	$(BIN)/python bench/load.py

# The interface's messages: extract them from the code into locales/loopscope.pot, then merge that into
# every language's catalog, locales/<lang>/LC_MESSAGES/loopscope.po (new messages empty, changed ones fuzzy).
# The catalogs are compiled when the app or the CLI starts: no .mo file is kept.
messages: $(VENV)/.app
	$(BIN)/pybabel -q extract -F locales/babel.cfg --ignore-dirs='.* ._ .venv tests bench' --sort-output \
		--add-location=file --project=Loopscope --header-comment="# The messages of Loopscope, made by 'make messages': translate them in locales/<lang>/LC_MESSAGES/loopscope.po." \
		-o locales/loopscope.pot .
	$(BIN)/pybabel -q update -i locales/loopscope.pot -d locales -D loopscope --ignore-obsolete --width=100

# Replay's samples: every scenario run on the scripted model, in English (samples/NAME.json) and in each
# language with a catalog (samples/LANG/NAME.json). Run it after a scenario or its words change.
samples: $(VENV)/.app
	@for lang in $$($(BIN)/python -c "from loop.text.catalogs import languages; print(*languages())"); do \
		dir=samples; [ $$lang = en ] || dir=samples/$$lang; mkdir -p $$dir; \
		for name in $$($(BIN)/python -c "from loop.engine.scenarios import SCENARIOS; print(*SCENARIOS)"); do \
			$(BIN)/python -m loop run --scenario $$name --lang $$lang --out $$dir/$$name.json >/dev/null \
				|| exit 1; echo "$$dir/$$name.json"; \
		done; \
	done

# A class bigger than one process (docs/deploy.md): REPLICAS Streamlit processes on ports 8501…, Debian's
# HAProxy in front of them on port 8500 (deploy/haproxy.cfg), one runs folder for all. Ctrl-C stops them all.
REPLICAS ?= 2
class: $(VENV)/.app haproxy bubblewrap
	LOOPSCOPE_RUNS="$${LOOPSCOPE_RUNS:-$(CURDIR)/runs}" $(BIN)/python deploy/classroom.py --replicas $(REPLICAS)

# The balancer of `make class` and of its tests: install Debian's haproxy when it is missing and we can.
haproxy:
	@if command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's haproxy for make class and its tests…"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy) >/tmp/loopscope-apt-haproxy.log 2>&1 \
		|| { echo "could not install haproxy (see /tmp/loopscope-apt-haproxy.log)"; exit 1; }; \
	else \
		echo "make class and its tests need HAProxy. Install it with: sudo apt-get install -y haproxy"; exit 1; \
	fi

# The runs store's tests run on a real PostgreSQL server too (tests/postgres.py starts one in a temporary
# folder): install Debian's postgresql when it is missing and we can.
postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's postgresql for the runs store's tests…"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql) >/tmp/loopscope-apt-postgresql.log 2>&1 \
		|| { echo "could not install postgresql (see /tmp/loopscope-apt-postgresql.log)"; exit 1; }; \
	else \
		echo "The runs store's tests need PostgreSQL. Install it with: sudo apt-get install -y postgresql"; exit 1; \
	fi

clean:
	rm -rf $(VENV) .pytest_cache
