# ggufmap - a thin wrapper over CMake.  The two commands a new machine needs:
#   make demo   build everything and tell the story on an embedded example
#   make test   build and run the whole suite with the system's own calls,
#               then again under ASan+UBSan with the POSIX fallbacks alone
#               (GGUFMAP_PORTABLE=posix, src/os.h): every test runs both ways
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

.PHONY: all deps deps-test build build-asan demo test test-fast test-asan install bench clean web

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

demo: build
	@bash scripts/demo.sh $(BUILD)

# The whole suite natively, then the whole suite again with the sanitizers
# and the POSIX fallbacks (the build-asan tree is configured posix).
test: test-fast test-asan

test-fast: deps-test build
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-asan: deps-test build-asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS)

web:
	@bash scripts/deps.sh web
	@bash web/build.sh $(abspath $(WEB_BUILD))

bench: deps-test build
	@bash bench/run.sh $(BUILD)

install: build
	@cmake --install $(BUILD)$(if $(PREFIX), --prefix $(PREFIX))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(WEB_BUILD)
