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

bench: $(BENCH_BIN) qemu
	@$(BENCH_BIN)
	$(call ninja-ours,$(QEMU_BUILD),$(DEVICE_BENCH))
	@cd $(QEMU_BUILD) && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
	    ./$(DEVICE_BENCH) | grep '^bench:'
