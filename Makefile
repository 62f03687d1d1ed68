# ggufmap - a thin wrapper over CMake.  The two commands a new machine needs:
#   make demo   build everything (quietly: the log goes to BUILD/build.log)
#               and tell the story on an embedded example
#   make test   build and run the whole suite with the system's own calls,
#               then again under ASan+UBSan with the POSIX fallbacks alone
#               (GGUFMAP_PORTABLE=posix, src/os.h): every test but those
#               labelled `once` (docs/testing.md) runs both ways
#   make check  the quick tier while working: `ctest -L check`, one
#               representative test per area (docs/testing.md)
# Each installs the Debian packages it misses first (scripts/deps.sh): build,
# demo and install only what building needs; test and bench also what the
# tests need (nodejs for the oracle, qemu and the arm64 cross compiler,
# rsvg-convert, groff).
#   make install [PREFIX=/usr/local]   library, headers, ggufmap, man page,
#                                      bash completion, pkg-config, CMake package
#   make web    the page (docs/web.md): WebAssembly with Debian's emscripten,
#               a static site in build-web/site for any static host

BUILD      ?= build
ASAN_BUILD ?= build-asan
WEB_BUILD  ?= build-web
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
ORACLE_DIR ?= $(abspath $(BUILD))/oracle
ORACLE_ARM64_DIR ?= $(abspath $(BUILD))/oracle-arm64
CMAKE_ARGS ?=
PREFIX     ?=
MAKEFLAGS  += --no-print-directory

.PHONY: all deps deps-test build build-asan demo check test test-fast test-asan install bench clean web

all: build

deps:
	@bash scripts/deps.sh build

deps-test:
	@bash scripts/deps.sh test

build: deps
	@cmake -S . -B $(BUILD) -DGGUFMAP_WERROR=ON -DGGUFMAP_ORACLE_DIR=$(ORACLE_DIR) -DGGUFMAP_ORACLE_ARM64_DIR=$(ORACLE_ARM64_DIR) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGGUFMAP_WERROR=ON -DGGUFMAP_SANITIZE=ON -DGGUFMAP_PORTABLE=posix \
	       -DGGUFMAP_ORACLE_DIR=$(ORACLE_DIR) -DGGUFMAP_ORACLE_ARM64_DIR=$(ORACLE_ARM64_DIR) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

# The build's ~130 lines of progress go to a log (its tail is shown if it fails).
demo: deps
	@mkdir -p $(BUILD)
	@echo "building ggufmap in $(BUILD)/ (log: $(BUILD)/build.log)"
	@$(MAKE) build >$(BUILD)/build.log 2>&1 || \
	 { tail -n 30 $(BUILD)/build.log; echo "make demo: the build failed; the log is $(BUILD)/build.log" >&2; exit 1; }
	@bash scripts/demo.sh $(BUILD)

# The whole suite natively, then again with the sanitizers and the POSIX
# fallbacks (the build-asan tree is configured posix), less the tests
# labelled `once`: the long oracle differentials, whose sanitized rerun
# would spend minutes in the unsanitized llama.cpp, and tests of what the
# ASan tree does not build (the llama.cpp patch series, the WebAssembly
# page).  docs/testing.md lists the tiers and their times.
test: test-fast test-asan

test-fast: deps-test build
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-asan: deps-test build-asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -LE '^once$$'

# The quick tier: a few minutes (docs/testing.md).
check: deps-test build
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -L '^check$$'

web:
	@bash scripts/deps.sh web
	@bash web/build.sh $(abspath $(WEB_BUILD))

bench: deps-test build
	@bash bench/run.sh $(BUILD)

install: build
	@cmake --install $(BUILD)$(if $(PREFIX), --prefix $(PREFIX))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(WEB_BUILD)
