# SPDX-License-Identifier: GPL-2.0-or-later
#
# `make bench`: speed figures of the core against baselines measured in
# the same run (tests/bench/bench.c says how).  Included from the
# top-level Makefile; built like the core, with -O2.
BENCH_SRCS := tests/bench/bench.c tests/fuzz/no-check.c \
              tests/unit/support/memdma.c tests/unit/support/epfix.c
BENCH_OBJS := $(BENCH_SRCS:%.c=$(OBJ)/%.o)
BENCH_BIN  := $(OBJ)/tests/bench/rnic-bench

.PHONY: bench

$(BENCH_BIN): $(BENCH_OBJS) $(CORE_LIB)
	$(CC) $(CORE_CFLAGS) -o $@ $^

-include $(BENCH_OBJS:.o=.d)

bench: $(BENCH_BIN)
	@$(BENCH_BIN)
