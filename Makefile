# linattn — build, test, benchmark, results.
#   make            build/liblinattn.a, build/liblinattn.so, build/linattn
#   make test       unit tests (cmocka), the NumPy checks of `linattn attend` and `block`,
#                   and the command's own checks (tests/command/)
#   make results    run the experiment suite, write results/*.csv and plots/*.png|svg
#   make plots      re-render plots/ from the CSV in results/
#   make bench      the benchmark goal table: kernels against BLIS sgemm in one process,
#                   also kept in build/bench.txt (`linattn help bench`)
#   make fuzz       libFuzzer on the .npy parser for FUZZ_SECONDS (60)
#   make check-torch  `linattn block` against PyTorch's own TransformerEncoderLayer
#                   (installs Debian's python3-torch, about 230 packages: not in make test)
#   make test SANITIZE=1   the unit tests under AddressSanitizer + UBSan (in build/asan)
# Missing Debian packages are installed by scripts/ensure-deps (as root or via sudo).

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

LIB_SRC := $(wildcard lib/*/*.c)
LIB_OBJ := $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
# The command: main.c and one file per subcommand in experiments/, linked with the helpers
# they share (experiments/common/: flags, the results-file writer, timers, inputs), which
# are built once into build/libcommand.a for the command and its tests.
CMD_SRC := $(wildcard experiments/*.c)
CMD_OBJ := $(CMD_SRC:experiments/%.c=$(BUILD)/experiments/%.o)
COMMON_SRC := $(wildcard experiments/common/*.c)
COMMON_OBJ := $(COMMON_SRC:experiments/%.c=$(BUILD)/experiments/%.o)
TEST_SRC := $(wildcard tests/*/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
CMD_TEST_BIN := $(filter $(BUILD)/tests/command/%,$(TEST_BIN))
LIB_TEST_BIN := $(filter-out $(CMD_TEST_BIN),$(TEST_BIN))
TEST_UTIL := $(BUILD)/tests/testutil.o
HEADERS := $(wildcard lib/*.h lib/*/*.h) $(wildcard experiments/*.h experiments/common/*.h) \
           $(wildcard tests/*.h)

.PHONY: all deps test bench results plots fuzz check-torch clean
.SECONDARY:
all: $(BUILD)/liblinattn.a $(BUILD)/liblinattn.so $(BUILD)/linattn $(BUILD)/libcommand.a

# One stamp per set of packages; every object waits for it (order-only).
build/.deps-build:
	@scripts/ensure-deps blis
	@mkdir -p build && touch $@
build/.deps-test: build/.deps-build
	@scripts/ensure-deps cmocka numpy
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
$(BUILD)/experiments/%.o: experiments/%.c $(HEADERS) | build/.deps-build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/%.o: tests/%.c $(HEADERS) | build/.deps-test
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/liblinattn.a: $(LIB_OBJ)
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
$(BUILD)/linattn: $(CMD_OBJ) $(BUILD)/libcommand.a $(BUILD)/liblinattn.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(LIB_TEST_BIN): %: %.o $(TEST_UTIL) $(BUILD)/liblinattn.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
$(CMD_TEST_BIN): %: %.o $(TEST_UTIL) $(BUILD)/libcommand.a $(BUILD)/liblinattn.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)

# Every test program runs even when an earlier one fails; the verdict is the last line.
test: $(TEST_BIN) $(BUILD)/linattn $(BUILD)/liblinattn.so $(BUILD)/libcommand.a | build/.deps-test
	@passed=0; failed=0; \
	echo "== scripts/check-exports"; \
	if scripts/check-exports $(BUILD)/liblinattn.so; then passed=$$((passed+1)); \
	else failed=$$((failed+1)); echo "FAILED: scripts/check-exports"; fi; \
	echo "== tests/command/check_command.sh"; \
	if tests/command/check_command.sh $(BUILD)/libcommand.a $(CMD_OBJ); then passed=$$((passed+1)); \
	else failed=$$((failed+1)); echo "FAILED: tests/command/check_command.sh"; fi; \
	for t in $(TEST_BIN); do \
	    echo "== $$t"; \
	    if $$t; then passed=$$((passed+1)); else failed=$$((failed+1)); echo "FAILED: $$t"; fi; \
	done; \
	echo "== tests/command/attend_numpy.py"; \
	if /usr/bin/python3 tests/command/attend_numpy.py $(BUILD)/linattn; then passed=$$((passed+1)); \
	else failed=$$((failed+1)); echo "FAILED: tests/command/attend_numpy.py"; fi; \
	echo "== tests/command/results_files.py"; \
	if /usr/bin/python3 tests/command/results_files.py $(BUILD)/linattn; then passed=$$((passed+1)); \
	else failed=$$((failed+1)); echo "FAILED: tests/command/results_files.py"; fi; \
	echo "== tests/command/block_numpy.py"; \
	if /usr/bin/python3 tests/command/block_numpy.py $(BUILD)/linattn; then passed=$$((passed+1)); \
	else failed=$$((failed+1)); echo "FAILED: tests/command/block_numpy.py"; fi; \
	echo "test programs: $$passed passed, $$failed failed"; \
	test $$failed -eq 0

check-torch: $(BUILD)/linattn | build/.deps-test
	@scripts/ensure-deps torch
	/usr/bin/python3 tests/command/block_torch.py $(BUILD)/linattn

FUZZ_SECONDS ?= 60
fuzz: | build/.deps-build
	@scripts/ensure-deps fuzz
	@mkdir -p build/fuzz/corpus
	clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -Wall -Wextra -Werror \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -Ilib fuzz/fuzz_npy.c lib/io/npy.c lib/core/status.c -o build/fuzz/fuzz_npy
	build/fuzz/fuzz_npy -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    -dict=fuzz/npy.dict -artifact_prefix=build/fuzz/ build/fuzz/corpus fuzz/seeds

# `linattn bench --goals`, shown and kept in build/bench.txt; the exit status is the
# benchmark's, not tee's (sh has no pipefail).
bench: $(BUILD)/linattn
	@mkdir -p build
	@{ $(BUILD)/linattn bench --goals 2>&1; echo $$? > build/bench.status; } | tee build/bench.txt; \
	exit $$(cat build/bench.status)

# `make results RESULTS_FLAGS=--resume` finishes an interrupted run; `=--quick` is a smoke test.
RESULTS_FLAGS ?=
results: $(BUILD)/linattn | build/.deps-plots
	$(BUILD)/linattn results --no-summary $(RESULTS_FLAGS)
	@$(MAKE) --no-print-directory plots
	@$(BUILD)/linattn results --summary

# Every script renders from results/*.csv (run from inside plots/); one that fails (its
# CSV missing, say) is named and the others still run.
plots: | build/.deps-plots
	@failed=0; for gp in plots/*.gp; do \
	    echo "gnuplot $$gp"; \
	    (cd plots && gnuplot $$(basename $$gp)) || { failed=$$((failed+1)); echo "FAILED: $$gp"; }; \
	done; test $$failed -eq 0

clean:
	rm -rf build
