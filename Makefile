# Two entry points for a fresh machine (see README):
#   make lab    install, build the sample dataset, open JupyterLab on notebooks/
#   make test   install system tools and test extras, run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SAMPLE ?= data/sample
PORT   ?= 8888

.PHONY: lab app app-files app-voila sample flowers install install-test constraints system-deps torch test test-fast bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python torch
	@echo "installing pcr-explore and its dependencies into $(VENV) ..."
	$(BIN)/python -m pip install --quiet -e ".[lab,torch,zfp]"

# PyTorch (notebooks 05-06, training and activation tests): a CPU build. Where
# a local CPU wheel sits in pip's find-links folder, its version is taken;
# elsewhere PyTorch's CPU index (the default index would bring a multi-GB
# CUDA build).
WHEELS ?= $(or $(PIP_FIND_LINKS),/opt/wheels)
torch: $(BIN)/python
	@if $(BIN)/python -c "import torch" 2>/dev/null; then :; \
	else echo "installing PyTorch (CPU build, about 1.5 GB) into $(VENV) ..."; fi
	@if $(BIN)/python -c "import torch" 2>/dev/null; then :; \
	elif ls $(WHEELS)/torch-*+cpu-*.whl >/dev/null 2>&1; then \
	  v=$$(ls $(WHEELS)/torch-*+cpu-*.whl | head -1 | sed -E 's/.*torch-([0-9.]+)\+cpu.*/\1/'); \
	  $(BIN)/python -m pip install --quiet "torch==$$v"; \
	else $(BIN)/python -m pip install --quiet torch --index-url https://download.pytorch.org/whl/cpu; fi

# The torch extra adds torchdata; its torch requirement is met by the CPU build the
# torch target installed, which pip keeps. The test stack is held to the versions in
# .ci/constraints.txt (`make constraints` writes it from a working venv): the suite
# runs against what it last passed with, and pip resolves in a minute, not ten.
install-test: $(BIN)/python system-deps torch
	@echo "installing pcr-explore with its test, dev and torch extras into $(VENV) ..."
	$(BIN)/python -m pip install --quiet -c .ci/constraints.txt -e ".[test,dev,torch]"

# The versions of the test stack now in $(VENV), for install-test (not torch, which
# the torch target installs, nor the benchmark-only packages).
constraints:
	$(BIN)/python -m pip freeze --exclude-editable \
	  | grep -viE '^(torch[ =]|nvidia-|triton[ =]|cleanvision=|litdata=|lightning-utilities=|mosaicml-streaming=)' \
	  > .ci/constraints.txt

# jpegtran (lossless transcode) and chromium (browser test) from Debian.
system-deps:
	@if ! command -v jpegtran >/dev/null || ! command -v chromium >/dev/null \
	    || [ -z "$$(ls /usr/lib/*/libturbojpeg.so.0 /usr/lib/libturbojpeg.so.0 2>/dev/null)" ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  if command -v apt-get >/dev/null; then \
	    echo "installing jpegtran, libturbojpeg and chromium with apt-get ..."; \
	    $$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
	      libjpeg-turbo-progs libturbojpeg0 chromium >/dev/null; \
	  else echo "install jpegtran (libjpeg-turbo) and chromium with your package manager"; fi; \
	fi

sample: install
	$(BIN)/pcr-explore sample $(SAMPLE)

# The flower photos for notebooks 05 and 06, fetched before class (229 MB into data/):
# without them (and without a network) the notebooks use a generated stand-in.
flowers: install
	@echo "downloading and encoding TensorFlow's flower photos into data/ ..."
	$(BIN)/python -c "from pcr_explore.train import load_flowers; print(load_flowers(cache_dir='data'))"

# JupyterLab asks in a pop-up whether to fetch Jupyter's news, and the pop-up covers the
# notebook's widgets on a 1280x720 screen: answered "no" for this environment's JupyterLab
# only, in a file of its own in overrides.d (the user's own overrides.json is untouched).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/pcr-explore.json
$(LAB_SETTINGS):
	@mkdir -p $(@D)
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' > $@

# --allow-root only where we run as root (containers, CI machines)
lab: sample $(LAB_SETTINGS)
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks --port=$(PORT) --no-browser \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# The notebooks as an app for a class: their text, outputs and live widgets, no code
# cells. Pick a notebook from the gallery; each opens in a fresh session.
APP_IP  ?= 127.0.0.1
APP_DIR ?= build/app
# The notebooks as marimo apps (no code shown, one tab per notebook): marimo convert
# writes build/app/NN_name.py from each notebook, full width; the sample data is this
# checkout's (PCR_SAMPLE_DIR), and so are the cached results next to it.
app-files:
	@rm -rf $(APP_DIR) && mkdir -p $(APP_DIR)
	@for nb in notebooks/0*.ipynb; do \
	  $(BIN)/marimo -q convert "$$nb" -o "$(APP_DIR)/$$(basename "$$nb" .ipynb).py" || exit 1; \
	done
	@sed -i 's/^app = marimo.App()$$/app = marimo.App(width="full")/' $(APP_DIR)/*.py
app: sample
	$(BIN)/python -m pip install --quiet -e ".[app]"
	$(MAKE) app-files
	PCR_SAMPLE_DIR=$(abspath $(SAMPLE)) $(BIN)/marimo run $(APP_DIR) --headless \
	  --host=$(APP_IP) --port=$(PORT)
# The same notebooks in Voila (maintained less these days; kept while it works)
app-voila: sample
	$(BIN)/python -m pip install --quiet -e ".[app]"
	$(BIN)/voila notebooks --port=$(PORT) --no-browser --Voila.ip=$(APP_IP)

# lint first: a lint or type error fails the run (CI's .ci/run is `make test`) before the
# long suite. --durations=20: the 20 slowest tests close the log (each test has a timeout,
# pyproject.toml)
test: install-test lint
	$(BIN)/python -m pytest --durations=20

test-fast: install-test
	$(BIN)/python -m pytest -m "not browser" -x

# system-deps: Debian's chromium for bench_browser_latency.py and bench_reload.py
bench: install system-deps
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	$(BIN)/python -m pip install --quiet --no-deps "mosaicml-streaming>=0.7"
	# litdata's declared dependencies bring torchvision, which replaces the CPU build of torch
	$(BIN)/python -m pip install --quiet --no-deps litdata lightning-utilities obstore tifffile
	$(BIN)/python -m pip install --quiet xxhash zstd python-snappy brotli catalogue
	$(BIN)/python bench/bench_pcr.py
	$(BIN)/python bench/bench_quality.py
	$(BIN)/python bench/bench_swap.py
	$(BIN)/python bench/bench_widgets.py
	$(BIN)/python bench/bench_browser_latency.py
	$(BIN)/python bench/bench_reload.py
	$(BIN)/python bench/bench_audit.py
	$(BIN)/python bench/bench_epochs.py
	$(BIN)/python bench/bench_reduced.py
	$(BIN)/python bench/bench_audit_cluster.py
	$(BIN)/python bench/bench_remote.py
	$(BIN)/python bench/bench_link.py
	$(BIN)/python bench/bench_train.py --threads 1
	$(BIN)/python bench/bench_scans.py
	$(BIN)/python bench/bench_decoders.py
	$(BIN)/python bench/bench_peers.py --scan-script standard lean spectral hybrid
	$(BIN)/python bench/bench_import.py
	$(BIN)/python bench/bench_cli_start.py
	$(BIN)/python bench/bench_measure_once.py
	$(BIN)/python bench/bench_walk.py
	$(BIN)/python bench/bench_budget.py --threads 2
	$(BIN)/python bench/bench_loader.py
	$(BIN)/python bench/bench_read_stages.py
	$(BIN)/python bench/bench_cache.py
	$(BIN)/python bench/bench_duplicates.py
	$(BIN)/python bench/bench_scale.py --n 1000 10000
	$(BIN)/python bench/bench_notebooks.py

# ruff's lint and format check, and mypy on the package ([tool.mypy] in pyproject.toml;
# about a minute and a half from a cold cache on two cores). After install-test: mypy
# reads the installed dependencies' types, and the test extra brings ruff and mypy.
lint: install-test
	$(BIN)/ruff check pcr_explore tests bench
	$(BIN)/ruff format --check pcr_explore tests bench
	$(BIN)/mypy

clean:
	rm -rf $(SAMPLE) data/results test-artifacts bench/results .pytest_cache
