# Every target sets itself up: a virtual environment under the repo, the
# package installed editable with its test extras.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# cuda13 when cupy-cuda13x is already in the environment (a CUDA 13 image), else cuda12:
# one cupy distribution, with NVRTC and headers of its own CUDA major version.
CUDA_EXTRA ?= $(shell $(PYTHON) -c "import importlib.metadata as m, sys; \
    sys.stdout.write('cuda13' if any((d.metadata['Name'] or '').lower() == 'cupy-cuda13x' \
    for d in m.distributions()) else 'cuda12')" 2>/dev/null || echo cuda12)

.PHONY: install test test-main test-sim test-cuda demo bench lint summary clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,$(CUDA_EXTRA)]'
	touch $(STAMP)

# Two tiers, each its own process (the backend is chosen once per process): the main tier
# (CPU tiers + emulated cuda always; real-cuda tests when a GPU is present) and the sim tier
# (the real CUDA backend over the simulated CuPy, cuda as the default device). They share
# nothing but the kernel caches, whose writes are atomic, so they run side by side, one per
# core; --output-sync prints each tier's output whole when it ends, and make fails if either
# fails (after the other has finished).
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target test-main test-sim

test-main: $(STAMP)
	$(PY) -m pytest -q

test-sim: $(STAMP)
	GPU_TENSOR_FALLBACK=sim $(PY) -m pytest -q -m sim

test-cuda: $(STAMP)
	$(PY) -m pytest -q -m cuda

# The main job: a demo on the best available device, then the memory summary.
demo: $(STAMP)
	$(VENV)/bin/gpu-tensor demo
	$(VENV)/bin/gpu-tensor memory-summary

summary: $(STAMP)
	$(VENV)/bin/gpu-tensor memory-summary

# The CPU-runnable benchmark subset (under five minutes); GPU runs: profiling/gpu_check.sh
bench: $(STAMP)
	$(PY) -m profiling.run_all --quick

lint: $(STAMP)
	$(VENV)/bin/ruff check gpu_tensor tests profiling
	$(VENV)/bin/ruff format --check gpu_tensor tests profiling

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
