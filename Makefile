# linattn — build, test, benchmark, results.
#   make            build/liblinattn.a, build/liblinattn.so, build/linattn
#   make test       unit tests (cmocka), the NumPy checks of `linattn attend` and `block`,
#                   and the command's own checks (tests/command/)
#   make results    run the experiment suite into a new results/runs/DATE-COMMIT/ (CSV,
#                   figures, SUMMARY.md); make results-update rewrites the committed
#                   reference (results/*.csv, results/SUMMARY.md, plots/*.png|svg)
#   make plots      re-render plots/ from the CSV in results/ (RESULTS=DIR: DIR's figures
#                   into DIR; `linattn help plot`)
#   make bench      the benchmark goal table: kernels against BLIS sgemm in one process,
#                   also kept in build/bench.txt (`linattn help bench`); make bench-python
#                   (separate, about two minutes): the Python call against the C call and
#                   linattn.torch against PyTorch's ops, into build/bench-python.csv
#   make fuzz       libFuzzer on the .npy parser, the weights loader and the --resume
#                   reader, FUZZ_SECONDS (60) each, one per core at a time
#   make bench-train  one training step of the copy model against PyTorch 1.13's on the same
#                   threads, and where the step goes (scripts/bench_train_torch.py)
#   make bench-peers  ONNX Runtime (npm's onnxruntime-node, in build/onnx) and PyTorch 1.13 on
#                   bench's shapes, with the ratios linattn/peer (not in make test)
#   make check-torch  `linattn block` against PyTorch's own TransformerEncoderLayer and
#                   TransformerDecoderLayer, `linattn model` against nn.Transformer,
#                   `linattn attend --mask` against its masked attention, `linattn train`'s
#                   loss, gradients and AdamW step against PyTorch's, and linattn.torch
#                   (gradcheck, MultiheadAttention, examples/train_torch.py) against PyTorch
#                   (installs Debian's python3-torch, about 230 packages: not in make test)
#   make python     the Python package (python/) into a venv, offline (docs/python.md)
#   make test SANITIZE=1   the unit tests under AddressSanitizer + UBSan (in build/asan)
#   make install PREFIX=/opt/linattn   header, libraries, command and linattn.pc
#   make format     clang-format every C file; make check-format checks (in .ci/run)
#   make test-portable  the tests on an x86-64 CPU without AVX-512 (qemu-user as a Haswell),
#                   then natively with LA_SIMD=off
# Missing Debian packages are installed by scripts/ensure-deps (as root or via sudo).

# Builds run on every core unless make -jN says otherwise (tests still run one at a time).
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)

CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif

# -march: x86-64-v3 (AVX2, FMA) where this CPU has them, else the portable baseline.
ifneq ($(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo 2>/dev/null && echo yes),)
MARCH ?= -march=x86-64-v3
else
MARCH ?= -march=x86-64
endif

# BLIS: pkg-config when it knows BLIS, else Debian's default location; override either.
# Debian's static libblis.a is linked rather than libblis.so: only it lets lib/cpu/gemm.c
# pick fast kernels on CPUs that BLIS 0.9 does not recognise (see la_blis_config()).
BLIS_CFLAGS ?= $(shell pkg-config --cflags blis 2>/dev/null)
BLIS_LIBS ?= $(shell pkg-config --libs blis 2>/dev/null || echo -l:libblis.a -lpthread)
CMOCKA_LIBS ?= $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

ifeq ($(SANITIZE),1)
BUILD ?= build/asan
OPT ?= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
BUILD ?= build
OPT ?= -O3 -g
endif

CFLAGS ?=
CFLAGS += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(MARCH) -fopenmp -fPIC \
          -Wall -Wextra -Werror -Ilib $(BLIS_CFLAGS)
LDLIBS = $(BLIS_LIBS) -lm
LDFLAGS += -fopenmp $(filter -fsanitize=%,$(OPT))
# Programs (not the shared library) under SANITIZE=1 are linked without PIE: a sanitizer
# build's command has 100,000 relative relocations to apply at every start, 8 ms of the
# 36 ms a `linattn --version` took on a 2-core Zen 5 guest (28 ms without), and the tests
# start it about 2,000 times.
EXE_LDFLAGS = $(LDFLAGS) $(if $(filter 1,$(SANITIZE)),-no-pie)

LIB_SRC := $(filter-out lib/dist/%,$(wildcard lib/*/*.c)) # lib/dist/: MPI only (below)
# Files written once for float and double: every lib/ file that includes core/real_typed.h
# is compiled twice, -DLA_REAL_F32 into NAME.f32.o and -DLA_REAL_F64 into NAME.f64.o.
TYPED_SRC := $(shell grep -l '^\#include "core/real_typed.h"' $(LIB_SRC))
TYPED_OBJ = $(foreach t,f32 f64,$(TYPED_SRC:lib/%.c=$(1)/lib/%.$(t).o))
LIB_OBJ := $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(filter-out $(TYPED_SRC),$(LIB_SRC))) \
           $(call TYPED_OBJ,$(BUILD))
COUNT_OBJ := $(patsubst lib/%.c,$(BUILD)/count/lib/%.o,$(filter-out $(TYPED_SRC),$(LIB_SRC))) \
             $(call TYPED_OBJ,$(BUILD)/count)
# The command: main.c and one file per subcommand in experiments/, linked with the helpers
# they share (experiments/common/: flags, the results-file writer, timers, inputs), which
# are built once into build/libcommand.a for the command and its tests.
CMD_SRC := $(wildcard experiments/*.c)
CMD_OBJ := $(CMD_SRC:experiments/%.c=$(BUILD)/experiments/%.o)
COMMON_SRC := $(wildcard experiments/common/*.c)
COMMON_OBJ := $(COMMON_SRC:experiments/%.c=$(BUILD)/experiments/%.o)
TEST_SRC := $(filter-out tests/mpi/%,$(wildcard tests/*/test_*.c)) # tests/mpi/: MPI only
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# Test programs that link the FLOP-counting library (-DLA_COUNT_FLOPS) instead.
COUNTED_TEST_BIN := $(BUILD)/tests/attention/test_cost
CMD_TEST_BIN := $(filter $(BUILD)/tests/command/%,$(TEST_BIN))
LIB_TEST_BIN := $(filter-out $(CMD_TEST_BIN) $(COUNTED_TEST_BIN),$(TEST_BIN))
TEST_UTIL := $(BUILD)/tests/testutil.o $(BUILD)/tests/yardsticks.o
HEADERS := $(wildcard lib/*.h lib/*/*.h) $(wildcard experiments/*.h experiments/common/*.h) \
           $(wildcard tests/*.h)
# ---- MPI, part 1 of 2: variables (part 2, the rules, follows `make test`) ----
# The distributed kernels (lib/dist/, header lib/linattn_mpi.h) are compiled with mpicc
# into $(BUILD)/liblinattn_mpi.a, never into liblinattn.a/.so. `make MPI=1` installs Open
# MPI (scripts/ensure-deps openmpi) and links $(BUILD)/linattn with mpicc, with the real
# dist-attend and dist-scaling (experiments/dist_*.c compiled with -DLA_WITH_MPI; without
# it they only say how to get them). `make test` runs tests/mpi/ under mpirun -np 1..4
# when MPI=1 or mpicc exists (with $(BUILD)/mpi/linattn), else says they were skipped.
MPI ?= 0
MPI_HEADERS := lib/linattn_mpi.h $(wildcard lib/dist/*.h)
HEADERS := $(filter-out $(MPI_HEADERS),$(HEADERS))
MPICC ?= mpicc
MPIRUN ?= mpirun --oversubscribe --allow-run-as-root --timeout 600
HAVE_MPI := $(if $(filter 1,$(MPI)),1,$(if $(shell command -v $(MPICC) 2>/dev/null),1,))
DIST_OBJ := $(patsubst %.c,$(BUILD)/mpi/%.o,$(wildcard lib/dist/*.c))
DIST_CMD_SRC := $(wildcard experiments/dist_*.c)
MPI_CMD_OBJ := $(filter-out $(DIST_CMD_SRC:experiments/%.c=$(BUILD)/experiments/%.o),$(CMD_OBJ)) \
               $(DIST_CMD_SRC:%.c=$(BUILD)/mpi/%.o)
MPI_TEST_BIN := $(patsubst %.c,$(BUILD)/mpi/%,$(wildcard tests/mpi/test_*.c))
ifeq ($(MPI),1)
LINATTN_OBJ := $(MPI_CMD_OBJ) $(BUILD)/liblinattn_mpi.a
LINATTN_CC := $(MPICC)
else
LINATTN_OBJ := $(CMD_OBJ)
LINATTN_CC := $(CC)
endif
# What make test adds: each test program under mpirun -np 1..4, then the Python checks
# of dist-attend and dist-scaling (tests/mpi/*.py, mpirun inside).
ifeq ($(SANITIZE),1)
MPI_TEST_LINES = echo "echo MPI tests skipped under SANITIZE=1";
else ifeq ($(HAVE_MPI),1)
# (and $(CMD_OBJ), which check_command.sh reads: with MPI=1 linattn links the mpi/ ones)
MPI_TEST_DEPS = $(MPI_TEST_BIN) $(BUILD)/mpi/linattn $(CMD_OBJ)
MPI_TEST_LINES = for t in $(MPI_TEST_BIN); do for np in 1 2 3 4; do \
	       echo "$(MPIRUN) -np $$np $$t"; done; done; \
	   for p in dist_attend dist_scaling; do \
	       echo "/usr/bin/python3 tests/mpi/$$p.py $(BUILD)/mpi/linattn"; done;
else
MPI_TEST_LINES = echo "echo MPI tests skipped: install libopenmpi-dev openmpi-bin or run make test MPI=1";
endif
# ---- end of MPI, part 1

.PHONY: all deps python test test-portable bench bench-train bench-peers bench-python results results-update plots fuzz check-torch install format check-format clean
.SECONDARY:
all: $(BUILD)/liblinattn.a $(BUILD)/liblinattn.so $(BUILD)/linattn $(BUILD)/libcommand.a \
     $(if $(filter 1,$(MPI)),$(BUILD)/liblinattn_mpi.a)

# One stamp per set of packages; every object waits for it (order-only).
build/.deps-build:
	@scripts/ensure-deps blis
	@mkdir -p build && touch $@
build/.deps-test: build/.deps-build
	@scripts/ensure-deps cmocka numpy pkgconfig
	@touch $@
build/.deps-plots:
	@scripts/ensure-deps gnuplot
	@mkdir -p build && touch $@
deps: build/.deps-build build/.deps-test build/.deps-plots

# The library exports only what lib/linattn.h marks LA_API: everything else is hidden,
# and the BLIS archive linked into the .so stays private (--exclude-libs).
$(BUILD)/lib/%.o: lib/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fvisibility=hidden -c $< -o $@
# TYPED_SRC's objects, once per precision (a pattern rule per target: several targets in
# one pattern rule would be made by one run of its recipe).
$(BUILD)/lib/%.f32.o: lib/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DLA_REAL_F32 -fvisibility=hidden -c $< -o $@
$(BUILD)/lib/%.f64.o: lib/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DLA_REAL_F64 -fvisibility=hidden -c $< -o $@
# The same library with the kernels counting the FLOPs they issue (core/internal.h,
# LA_COUNT), for the cost model's test only; never installed or benchmarked.
$(BUILD)/count/lib/%.o: lib/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DLA_COUNT_FLOPS -fvisibility=hidden -c $< -o $@
$(BUILD)/count/lib/%.f32.o: lib/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DLA_REAL_F32 -DLA_COUNT_FLOPS -fvisibility=hidden -c $< -o $@
$(BUILD)/count/lib/%.f64.o: lib/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DLA_REAL_F64 -DLA_COUNT_FLOPS -fvisibility=hidden -c $< -o $@
$(BUILD)/experiments/%.o: experiments/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
# The commit the command is built from, for the `# git_commit:` line of every results file:
# git runs here, in the sources, at build time (never where linattn runs); "(dirty)" when
# tracked files differ from it, "unknown" outside a git checkout. The stamp rebuilds
# metadata.o when it changes.
GIT_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null | tr -cd '0-9a-f')
GIT_COMMIT := $(if $(GIT_COMMIT),$(GIT_COMMIT)$(if $(shell git status --porcelain --untracked-files=no 2>/dev/null | head -n 1), (dirty)),unknown)
$(BUILD)/.git-commit: FORCE
	@mkdir -p $(@D) && echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(BUILD)/experiments/common/metadata.o: $(BUILD)/.git-commit
$(BUILD)/experiments/common/metadata.o: CFLAGS += -DLA_GIT_COMMIT='"$(GIT_COMMIT)"'
$(BUILD)/tests/%.o: tests/%.c $(HEADERS) | build/.deps-test
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/liblinattn.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/count/liblinattn.a: $(COUNT_OBJ)
	rm -f $@ && ar rcs $@ $^
# The version script (build/linattn.map) lists the LA_API functions of lib/linattn.h: it
# also hides what visibility cannot (the ifunc resolvers GCC makes for target_clones).
$(BUILD)/liblinattn.so: $(LIB_OBJ) lib/linattn.h
	{ echo '{ global:'; sed -n 's/^LA_API[^(]*[ *]\(la_[a-z0-9_]*\)(.*/  \1;/p' lib/linattn.h; \
	  echo '  local: *; };'; } > $(BUILD)/linattn.map
	$(CC) -shared $(LDFLAGS) -Wl,--exclude-libs,ALL -Wl,--version-script=$(BUILD)/linattn.map \
	    -Wl,-soname,liblinattn.so -o $@ $(LIB_OBJ) $(LDLIBS)
$(BUILD)/libcommand.a: $(COMMON_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/linattn: $(LINATTN_OBJ) $(BUILD)/libcommand.a $(BUILD)/liblinattn.a $(BUILD)/.mpi-mode
	$(LINATTN_CC) $(EXE_LDFLAGS) -o $@ $(filter-out %.mpi-mode,$^) $(LDLIBS)
$(LIB_TEST_BIN): %: %.o $(TEST_UTIL) $(BUILD)/liblinattn.a
	$(CC) $(EXE_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
$(CMD_TEST_BIN): %: %.o $(TEST_UTIL) $(BUILD)/libcommand.a $(BUILD)/liblinattn.a
	$(CC) $(EXE_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
$(COUNTED_TEST_BIN): %: %.o $(TEST_UTIL) $(BUILD)/count/liblinattn.a
	$(CC) $(EXE_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)

# The Python checks of the command (tests/command/*.py), each given the command's path.
# Under SANITIZE=1 the two checks that run `linattn attend` a thousand times over leave out
# LeakSanitizer's scan at exit (0.14 s a process where page faults are dear, for the 36 MiB
# of BLIS packing buffers the linear kernels reserve); every other check, the hostile suite
# and the C tests keep it, and they run attend's paths too.
PY_NO_LEAK_SCAN := attend_numpy attend_grad_numpy
PY_CHECK_ENV = $(if $(and $(filter 1,$(SANITIZE)),$(filter $(1),$(PY_NO_LEAK_SCAN))),env ASAN_OPTIONS="$${ASAN_OPTIONS:-}:detect_leaks=0" )
PY_CHECKS := attend_numpy attend_grad_numpy results_files scaling_sweeps plot_figures \
             csv_load results_folders params_models block_numpy data_numpy vocabulary \
             approx_runs complexity_runs model_numpy roofline_runs scores_runs \
             reference_guard commands_agree input_layout train_runs learn_runs \
             generate_runs

# The hostile suite's groups (tests/hostile/*.sh), each a test of its own, so that the
# slow ones (signals: 120 runs killed at random moments) run beside the others.
HOSTILE_GROUPS := $(filter-out run,$(basename $(notdir $(wildcard tests/hostile/*.sh))))

# The Python package's checks (tests/python/*.py), run by the python of the venv that
# `make python` installs the package into; skipped under SANITIZE=1 (an AddressSanitizer
# library cannot be loaded into the uninstrumented interpreter).
VENV ?= $(BUILD)/venv
PY_PACKAGE_CHECKS := numpy_package
ifeq ($(SANITIZE),1)
PY_PACKAGE_DEPS :=
PY_PACKAGE_LINES = echo "echo Python package checks skipped under SANITIZE=1";
else
PY_PACKAGE_DEPS := $(VENV)/.installed
PY_PACKAGE_LINES = for p in $(PY_PACKAGE_CHECKS); do \
	       echo "$(VENV)/bin/python tests/python/$$p.py $(BUILD)/linattn"; done;
endif

# Every test runs even when an earlier one fails (scripts/run-tests); the last lines say
# what failed and why, and the logs stay in $(BUILD)/test-logs (with each one's seconds
# in times). LA_TEST_PROFILE: full (every shape, repetition and size) for make test,
# quick for SANITIZE=1 and test-portable; LA_TEST_PROFILE=full runs those in full too
# (docs/testing.md: what quick keeps, and when to run the full profile).
# TEST_JOBS test programs run at a time (default: one per core; each one's output is shown
# whole when it ends; TEST_JOBS=1 streams it as it comes).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# ... but these run with nothing beside them: they compare two rate measurements
ALONE_TEST_BIN := $(BUILD)/tests/hostile/test_fma_probe
# OMP_WAIT_POLICY=passive: some tests run 3 threads on 2 cores, and threads that spin at
# a barrier take the core from the one still working (the quick test_attention with
# another process busy: 302 s active, 153 s passive); results do not depend on it.
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1: malloc's large blocks on 2 MiB pages. Where a page
# fault is dear (a 2-core AMD EPYC Zen 5 guest: 11 µs per 4 KiB page), the quick
# test_attention took 6.0-7.2 s with it against 8.9 s without (faults 95,000 -> 2,000-10,000).
# Under AddressSanitizer (its own allocator) it changes nothing.
test: export LA_TEST_PROFILE ?= $(if $(filter 1,$(SANITIZE)),quick,full)
test test-portable: export OMP_WAIT_POLICY ?= passive
test test-portable: export GLIBC_TUNABLES ?= glibc.malloc.hugetlb=1
test: $(TEST_BIN) $(BUILD)/linattn $(BUILD)/liblinattn.so $(BUILD)/libcommand.a $(MPI_TEST_DEPS) \
      $(PY_PACKAGE_DEPS) | build/.deps-test build/.deps-plots
	@{ echo "scripts/check-exports $(BUILD)/liblinattn.so"; \
	   echo "scripts/check-architecture"; \
	   if [ "$(SANITIZE)" = 1 ]; then \
	       echo "echo check-install: skipped under SANITIZE=1 >&2"; \
	   else echo scripts/check-install; fi; \
	   echo "tests/command/check_command.sh $(BUILD)/libcommand.a $(CMD_OBJ)"; \
	   for t in $(TEST_BIN); do case " $(ALONE_TEST_BIN) " in *" $$t "*) echo "alone: $$t" ;; \
	       *) echo $$t ;; esac; done; \
	   $(foreach g,$(HOSTILE_GROUPS),echo "tests/hostile/run.sh $(BUILD)/linattn $(g)";) \
	   $(foreach p,$(PY_CHECKS),echo '$(call PY_CHECK_ENV,$(p))/usr/bin/python3 tests/command/$(p).py $(BUILD)/linattn';) \
	   $(PY_PACKAGE_LINES) \
	   $(MPI_TEST_LINES) } | scripts/run-tests $(BUILD)/test-logs 0 $(TEST_JOBS)

# ---- MPI, part 2 of 2: rules (variables in part 1) ----
build/.deps-mpi:
	@scripts/ensure-deps openmpi
	@mkdir -p build && touch $@
# lib/dist/, experiments/dist_*.c and tests/mpi/ compiled with mpicc into $(BUILD)/mpi/.
$(BUILD)/mpi/%.o: %.c $(HEADERS) $(MPI_HEADERS) | build/.deps-build build/.deps-mpi
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS) -DLA_WITH_MPI -Itests -c $< -o $@
$(BUILD)/liblinattn_mpi.a: $(DIST_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/mpi/linattn: $(MPI_CMD_OBJ) $(BUILD)/libcommand.a $(BUILD)/liblinattn_mpi.a $(BUILD)/liblinattn.a
	$(MPICC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(MPI_TEST_BIN): %: %.o $(TEST_UTIL) $(BUILD)/liblinattn_mpi.a $(BUILD)/liblinattn.a
	$(MPICC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
# $(BUILD)/linattn is relinked when MPI changes (the stamp holds the last MPI=).
$(BUILD)/.mpi-mode: FORCE
	@mkdir -p $(@D) && echo '$(MPI)' | cmp -s - $@ || echo '$(MPI)' > $@
.PHONY: FORCE # (.SECONDARY above: a plain FORCE: would never run)
FORCE:
# ---- end of MPI, part 2

# make install PREFIX=/opt/linattn: the header, both libraries, the command (with the
# gnuplot scripts of `linattn plot` in share/linattn/plots) and a pkg-config file, so a
# C user builds with `cc app.c $(pkg-config --cflags --libs linattn)` (linattn.pc carries
# an rpath, so the program runs as built), or a static program with
# `cc -static app.c $(pkg-config --cflags --static --libs linattn)` (BLIS and OpenMP from
# Libs.private). scripts/check-install builds and runs both.
PREFIX ?= /usr/local
LA_VERSION := $(shell sed -n 's/^\#define LA_VERSION_STRING "\(.*\)"/\1/p' lib/linattn.h)
install: $(BUILD)/liblinattn.a $(BUILD)/liblinattn.so $(BUILD)/linattn
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 lib/linattn.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/liblinattn.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/liblinattn.so $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/linattn $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/linattn/plots
	install -m 644 plots/*.gp plots/style.gpi $(DESTDIR)$(PREFIX)/share/linattn/plots/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LA_VERSION)|' \
	    -e 's|@PRIVATE_LIBS@|$(BLIS_LIBS) -fopenmp -lm|' lib/linattn.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/linattn.pc

# make test-portable: what make test checks, on a CPU without AVX-512. First every test
# program, and the `linattn` checks through a wrapper, under qemu-user emulating a
# Haswell: AVX2 and FMA, which -march=x86-64-v3 needs, but no AVX-512, so an AVX-512
# instruction anywhere is SIGILL. (The model's pcid, x2apic, tsc-deadline, hle, invpcid
# and rtm are switched off: qemu cannot emulate them and says so on stderr, which the
# `linattn` checks read.) Then the same natively with LA_SIMD=off, the portable float32
# paths on this CPU (what `LA_SIMD=off make test` runs). Each run is bounded by
# PORTABLE_TIMEOUT seconds (qemu is 5-50 times slower than the CPU; the attention harness,
# every registry row against its reference, took over 600 s under qemu on a busy machine).
QEMU_CPU ?= Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm
PORTABLE_TIMEOUT ?= 1500
test-portable: export LA_TEST_PROFILE ?= quick
test-portable: $(TEST_BIN) $(BUILD)/linattn | build/.deps-test
	@scripts/ensure-deps qemu
	@printf '#!/bin/sh\nexec qemu-x86_64 -cpu %s "$$(dirname "$$0")/linattn" "$$@"\n' \
	    '$(QEMU_CPU)' > $(BUILD)/linattn-qemu && chmod +x $(BUILD)/linattn-qemu
	@{ for t in $(TEST_BIN); do echo "qemu-x86_64 -cpu $(QEMU_CPU) $$t"; done; \
	   for p in attend_numpy attend_grad_numpy block_numpy; do \
	       echo "/usr/bin/python3 tests/command/$$p.py $(BUILD)/linattn-qemu"; done; \
	   for t in $(TEST_BIN); do echo "env LA_SIMD=off $$t"; done; \
	   for p in attend_numpy attend_grad_numpy block_numpy; do \
	       echo "env LA_SIMD=off /usr/bin/python3 tests/command/$$p.py $(BUILD)/linattn"; done; } | \
	    scripts/run-tests $(BUILD)/test-logs-portable $(PORTABLE_TIMEOUT) $(TEST_JOBS)

# make python: the Python package (python/) with the shared library it was built with,
# installed offline into a venv over Debian's /usr/bin/python3 and its site packages
# (NumPy; PyTorch once make check-torch installed it); VENV=DIR for another venv than
# $(BUILD)/venv (docs/python.md).
python: $(VENV)/.installed
$(VENV)/.installed: $(BUILD)/liblinattn.so python/pyproject.toml python/README.md \
                    $(wildcard python/linattn/*.py) python/linattn/py.typed | build/.deps-python
	rm -rf $(BUILD)/python && mkdir -p $(BUILD)/python
	cp -r python/pyproject.toml python/README.md python/linattn $(BUILD)/python/
	cp $(BUILD)/liblinattn.so $(BUILD)/python/linattn/
	[ -x $(VENV)/bin/python ] || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/python -m pip install --quiet --no-index --no-build-isolation --no-deps \
	    --force-reinstall $(BUILD)/python
	touch $@
build/.deps-python: build/.deps-test
	@scripts/ensure-deps venv wheel
	@touch $@

check-torch: $(BUILD)/linattn $(VENV)/.installed | build/.deps-test
	@scripts/ensure-deps torch
	/usr/bin/python3 tests/command/block_torch.py $(BUILD)/linattn
	/usr/bin/python3 tests/command/model_torch.py $(BUILD)/linattn
	/usr/bin/python3 tests/command/attend_torch.py $(BUILD)/linattn
	/usr/bin/python3 scripts/check_torch_train.py $(BUILD)/linattn
	$(VENV)/bin/python tests/python/torch_package.py
	$(VENV)/bin/python examples/train_torch.py --check

FUZZ_SECONDS ?= 60
# Three targets, FUZZ_SECONDS each, as many at a time as make's jobs (one per core; .ci/run
# gives 20 s: 40 s on two cores): the .npy parser, the weights folder loader, and the CSV
# reader behind --resume. Each one's output goes to build/fuzz/NAME.log: its DONE line
# (runs, coverage) is shown when it ends, the whole log when it finds a crash (the input
# in build/fuzz/).
FUZZ_CC = clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -Wall -Wextra -Werror \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Ilib
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -artifact_prefix=build/fuzz/
FUZZ_TARGETS := npy weights resume
FUZZ_SRC_npy := fuzz/fuzz_npy.c lib/io/npy.c lib/io/outfile.c lib/core/status.c
FUZZ_SRC_weights := fuzz/fuzz_weights.c lib/io/weights.c lib/io/npy.c lib/io/outfile.c \
    lib/core/status.c lib/core/problem.c
FUZZ_SRC_resume := fuzz/fuzz_resume.c experiments/common/record.c \
    experiments/common/rows.c experiments/common/metadata.c experiments/common/lock.c \
    experiments/common/machine.c experiments/common/timer.c experiments/common/memory.c \
    experiments/common/stats.c experiments/common/guard.c lib/io/outfile.c lib/core/status.c
# each one's seeds (committed) and the dictionary it mutates with, if any
FUZZ_SEEDS_npy := fuzz/seeds
FUZZ_SEEDS_weights := fuzz/seeds_weights
FUZZ_SEEDS_resume := fuzz/seeds_resume
FUZZ_DICT_npy := -dict=fuzz/npy.dict
FUZZ_DICT_weights := -dict=fuzz/npy.dict
fuzz: $(FUZZ_TARGETS:%=fuzz-run-%)
build/.deps-fuzz: | build/.deps-build
	@scripts/ensure-deps fuzz
	@touch $@
.PHONY: $(FUZZ_TARGETS:%=fuzz-run-%)
.SECONDEXPANSION:
$(FUZZ_TARGETS:%=build/fuzz/fuzz_%): build/fuzz/fuzz_%: $$(FUZZ_SRC_$$*) $(HEADERS) | build/.deps-fuzz
	@mkdir -p $(@D)
	$(FUZZ_CC) $(if $(filter resume,$*),-Iexperiments) $(FUZZ_SRC_$*) -lm -o $@
$(FUZZ_TARGETS:%=fuzz-run-%): fuzz-run-%: build/fuzz/fuzz_%
	@mkdir -p build/fuzz/corpus_$*
	@echo "fuzz $*: $(FUZZ_SECONDS) s"
	@if build/fuzz/fuzz_$* $(FUZZ_RUN) $(FUZZ_DICT_$*) build/fuzz/corpus_$* $(FUZZ_SEEDS_$*) \
	        > build/fuzz/$*.log 2>&1; then \
	    echo "fuzz $*: no crash: $$(grep -E "DONE|^Done" build/fuzz/$*.log | tr "\n" " ")"; \
	else cat build/fuzz/$*.log; echo "fuzz $*: FAILED (its log above; the failing input in build/fuzz/)"; exit 1; fi

# `linattn bench --goals`, shown and kept in build/bench.txt; the exit status is the
# benchmark's, not tee's (sh has no pipefail). `make bench RUNS=5`: that many runs, kept in
# build/bench-1.txt …, then every goal's measurements side by side and in how many runs it
# was met (scripts/goals-tally: a goal counts as met in at least 4 of 5 quiet runs).
RUNS ?= 1
bench: $(BUILD)/linattn
	@mkdir -p build
	@if [ "$(RUNS)" = 1 ]; then \
	    { $(BUILD)/linattn bench --goals 2>&1; echo $$? > build/bench.status; } | tee build/bench.txt; \
	    exit $$(cat build/bench.status); \
	fi; \
	files=; for r in $$(seq 1 $(RUNS)); do \
	    echo "bench --goals: run $$r of $(RUNS)"; \
	    $(BUILD)/linattn bench --goals > build/bench-$$r.txt 2>&1 || exit $$?; \
	    files="$$files build/bench-$$r.txt"; \
	done; \
	scripts/goals-tally $$files | tee build/bench.txt

# `make bench-peers`: the peers on bench's shapes (B = 1, H = 8, d = 64, 2 threads, N =
# PEER_N), each printed with the ratio linattn/peer: ONNX Runtime's CPU opset-23 Attention
# (plain and causal) and linear attention as a graph of standard ONNX operators
# (scripts/peer_onnx.js, run with Debian's nodejs; onnxruntime-node installed from npm into
# build/onnx, its CUDA download skipped: the CPU binaries are in the package), then PyTorch
# 1.13 (scripts/peer_torch.py) when python3-torch is installed (make check-torch).
PEER_N ?= 4096
ONNXRUNTIME_VERSION ?= 1.30.0
bench-peers: $(BUILD)/linattn
	@scripts/ensure-deps node
	@[ -d build/onnx/node_modules/onnxruntime-node ] || \
	    ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix build/onnx --no-audit --no-fund \
	        onnxruntime-node@$(ONNXRUNTIME_VERSION)
	node scripts/peer_onnx.js $(BUILD)/linattn $(PEER_N)
	@if /usr/bin/python3 -c 'import torch' 2>/dev/null; then \
	    /usr/bin/python3 scripts/peer_torch.py --n $(PEER_N) --linattn $(BUILD)/linattn; \
	else echo "bench-peers: PyTorch not installed (make check-torch installs python3-torch): skipped"; fi

# `make bench-train`: the copy model's training step in linattn and in PyTorch 1.13 on the
# same threads, alternating (scripts/bench_train_torch.py; about a minute on 2 cores).
bench-train: $(BUILD)/linattn
	@scripts/ensure-deps torch
	/usr/bin/python3 scripts/bench_train_torch.py $(BUILD)/linattn --threads 2

# `make bench-python`: the Python package's costs in one process (scripts/bench_python.py,
# docs/performance.md): linattn.attention against the bare la_attention call (overhead at
# N = 64, ratio at N = 4096) and linattn.torch's forward+backward against PyTorch's own
# operators on the same threads; the table is kept in $(BUILD)/bench-python.csv. About two
# minutes on 2 cores, so not part of make bench. Without PyTorch its part is skipped.
bench-python: $(VENV)/.installed
	@scripts/ensure-deps torch || echo "bench-python: no PyTorch: its part will be skipped"
	$(VENV)/bin/python scripts/bench_python.py --out $(BUILD)/bench-python.csv

# `make results`: the suite into a new run folder results/runs/DATE-COMMIT/ (CSV, figures,
# SUMMARY.md; results/runs/latest points to it), never into the committed reference.
# `make results-update` rewrites the reference: results/*.csv, results/SUMMARY.md, plots/.
# `RESULTS_FLAGS=--resume` finishes an interrupted run (the latest); `=--quick` is a smoke test.
RESULTS_FLAGS ?=
results: $(BUILD)/linattn | build/.deps-plots
	$(BUILD)/linattn results $(RESULTS_FLAGS)
results-update: $(BUILD)/linattn | build/.deps-plots
	$(BUILD)/linattn results --update $(RESULTS_FLAGS)

# `linattn plot` draws the figures of every results file in RESULTS (plots/*.gp, with the
# run's settings in each subtitle): those of results/ go to plots/ (the README's), those
# of another folder (make plots RESULTS=results/runs/x) into that folder.
RESULTS ?= results
PLOTS_OUT ?= $(if $(filter results results/,$(RESULTS)),plots,$(RESULTS))
plots: $(BUILD)/linattn | build/.deps-plots
	$(BUILD)/linattn plot --from $(RESULTS) --out $(PLOTS_OUT)

# Every tracked C file in the layout of the root's .clang-format (checked in .ci/run).
format:
	@scripts/ensure-deps format
	scripts/check-format --fix
check-format:
	@scripts/ensure-deps format
	@scripts/check-format

clean:
	rm -rf build
