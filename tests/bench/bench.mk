# SPDX-License-Identifier: GPL-2.0-or-later
#
# `make bench`: speed figures of the core, then of the device in two QEMU
# processes, against baselines measured in the same run (tests/bench/
# bench.c and device-bench.c say how).  Included from the
# top-level Makefile; built like the core, with -O2.
BENCH_SRCS := tests/bench/bench.c tests/fuzz/no-check.c \
              tests/unit/support/memdma.c tests/unit/support/epfix.c
BENCH_OBJS := $(BENCH_SRCS:%.c=$(OBJ)/%.o)
BENCH_BIN  := $(OBJ)/tests/bench/rnic-bench

.PHONY: bench

$(BENCH_BIN): $(BENCH_OBJS) $(CORE_LIB)
	$(CC) $(CORE_CFLAGS) -o $@ $^

-include $(BENCH_OBJS:.o=.d)

# The device bench is a qtest program: two QEMU processes with -device rnic.
DEVICE_BENCH := tests/qtest/rnic-device-bench

# pipefail: the device bench's own status, not grep's, fails the recipe
# (make's shell has none by default).
bench: $(BENCH_BIN) qemu
	@$(BENCH_BIN)
	$(call ninja-ours,$(QEMU_BUILD),$(DEVICE_BENCH))
	@set -o pipefail; cd $(QEMU_BUILD) && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
	    ./$(DEVICE_BENCH) | grep '^bench:'

# The scale soak (tests/qtest/rnic-soak-test.c): 10,000 QPs on one device,
# 1,000 connected to a second QEMU and moving traffic at once, each device
# on an IOThread; then both devices in one QEMU on one IOThread.  About
# 25 s each: `make check` runs the first (check-soak, which ends with the
# summary line check-all.sh counts), `make soak` and `make e2e` both.
SOAK_TEST := tests/qtest/rnic-soak-test
SOAK_ONLY ?=

.PHONY: soak check-soak
soak: qemu
	$(call ninja-ours,$(QEMU_BUILD),$(SOAK_TEST))
	@cd $(QEMU_BUILD) && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
	    ./$(SOAK_TEST) --tap -k $(if $(SOAK_ONLY),-p $(SOAK_ONLY))

# Counted from its TAP lines: a -p path that names no test exits 0 having
# run nothing, and that is a failure too.
check-soak:
	@$(MAKE) --no-print-directory soak \
	    SOAK_ONLY=/x86_64/rnic/soak/qps-connections-traffic 2>&1 | tee $(BUILD)/soak.log; \
	rc=$${PIPESTATUS[0]}; ok=$$(grep -c '^ok ' $(BUILD)/soak.log); \
	bad=$$(grep -c '^not ok ' $(BUILD)/soak.log); \
	{ [ $$rc = 0 ] && [ $$ok -gt 0 ]; } || [ $$bad -gt 0 ] || bad=1; \
	echo "soak: $$ok passed, $$bad failed"; [ $$bad = 0 ]

# `make bench-guest`: perftest between two rnic guests and two siw guests
# and raw TCP between two host processes, in one run, as one table of
# ratios (tests/e2e/bench-guest.sh; about fifteen minutes, not in make check).
TCP_PAIR := $(OBJ)/tests/bench/tcp-pair

.PHONY: bench-guest

$(TCP_PAIR): tests/bench/tcp-pair.c
	@mkdir -p $(@D)
	$(CC) $(CORE_CFLAGS) -o $@ $<

bench-guest: $(TCP_PAIR) qemu e2e-prep
	TCP_PAIR=$(abspath $(TCP_PAIR)) bash $(E2E_DIR)/bench-guest.sh
