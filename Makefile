# Thin wrapper around CMake; see README.md.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)

.PHONY: all deps build run test asan bench fuzz gpu-check fmt clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@bash scripts/run.sh $(BUILD)/tide

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTIDE_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

bench: build
	@bash bench/run.sh $(BUILD)

# The NVML agent on this machine's NVIDIA GPUs (needs a GPU and PyTorch;
# not part of test: CI has no GPU). See docs/health.md.
gpu-check: build
	@python3 tests/gpu/nvml_check.py $(BUILD)/tide

# libFuzzer harnesses (tests/fuzz/), FUZZ_SECONDS each; see scripts/fuzz.sh.
fuzz: deps
	@bash scripts/fuzz.sh

fmt:
	@clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'bench/*.c')

clean:
	@rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
