# SPDX-License-Identifier: GPL-2.0-or-later
#
# Fuzzing: libFuzzer targets built with clang (see tests/fuzz/).  Included
# from the top-level Makefile.
#
# `make fuzz` runs each target FUZZ_SECONDS; `make fuzz-device` runs
# QEMU's generic-fuzz on the whole device (build/qemu-san) for
# FUZZ_DEVICE_SECONDS from the corpus kept in tests/fuzz/device-corpus;
# `make fuzz-smoke` runs all of them 10 s.  Each fails on any crash and
# prints each target's executions.  All output, grown corpora and crash
# inputs stay under build/fuzz/.
FUZZ_CC      := clang
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := fuzz_rx fuzz_mpa fuzz_fpdu
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -Wall -Wextra -Werror \
                -Wmissing-prototypes -Wstrict-prototypes -Wvla -Wshadow \
                -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=all
FUZZ_SUPPORT := tests/unit/support/memdma.c tests/unit/support/epfix.c \
                tests/fuzz/rxside.c tests/fuzz/no-check.c
FUZZ_OBJS    := $(CORE_SRCS:%.c=$(FUZZ_DIR)/obj/%.o) \
                $(FUZZ_SUPPORT:%.c=$(FUZZ_DIR)/obj/%.o)
# seed generator: a plain build of its own, it fuzzes nothing
SEEDS_SRCS   := tests/fuzz/seeds.c tests/fuzz/rxside.c tests/fuzz/no-check.c \
                tests/unit/support/memdma.c tests/unit/support/epfix.c \
                tests/unit/support/pcap_stream.c
SEEDS_OBJS   := $(SEEDS_SRCS:%.c=$(FUZZ_DIR)/host/%.o)
SEEDS_BIN    := $(FUZZ_DIR)/seeds
# per target: the longest input, then extra libFuzzer options
FUZZ_MAXLEN_fuzz_rx   := 32768
FUZZ_MAXLEN_fuzz_mpa  := 2048
FUZZ_MAXLEN_fuzz_fpdu := 32768
FUZZ_MAXLEN_fuzz_device := 4096
FUZZ_DEVICE_SECONDS ?= 60
DEVICE_CORPUS := $(wildcard tests/fuzz/device-corpus/*)
FUZZ_SPECS   = $(foreach t,$(1),$(t):$(FUZZ_MAXLEN_$(t)))

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-seeds fuzz-device fuzz-device-prep
.PRECIOUS: $(FUZZ_DIR)/obj/%.o $(FUZZ_DIR)/host/%.o

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(INCLUDES) \
	    -MMD -MP -c $< -o $@

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_LDFLAGS) -o $@ $^

# fuzz_rx backs guest memory with a buffer of its own (see fuzz_rx.c)
$(FUZZ_DIR)/fuzz_rx: FUZZ_LDFLAGS := -Wl,--wrap=memdma_init,--wrap=memdma_free

$(FUZZ_DIR)/host/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CORE_CFLAGS) $(INCLUDES) -MMD -MP -c $< -o $@

$(SEEDS_BIN): $(SEEDS_OBJS) $(CORE_LIB)
	$(CC) $(CORE_CFLAGS) -o $@ $^ -lpcap

-include $(wildcard $(FUZZ_DIR)/obj/*/*.d $(FUZZ_DIR)/obj/*/*/*.d \
                    $(FUZZ_DIR)/obj/*/*/*/*.d $(FUZZ_DIR)/host/*/*/*.d \
                    $(FUZZ_DIR)/host/*/*/*/*.d)

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/%)

# Seeds are made afresh each run, never committed.
fuzz-seeds: $(SEEDS_BIN)
	@rm -rf $(FUZZ_TARGETS:%=$(FUZZ_DIR)/corpus-%)
	$(SEEDS_BIN) $(FUZZ_DIR)

fuzz: fuzz-build fuzz-seeds
	@bash tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) \
	    $(call FUZZ_SPECS,$(FUZZ_TARGETS))

# run.sh runs build/fuzz/fuzz_device like the others: a launcher of
# qemu-fuzz-x86_64 (tests/fuzz/device.sh).  Its seeds: the bring-up
# sequences device-seeds.py writes, plus the corpus an earlier long run
# grew, minimized and committed (tests/fuzz/device-corpus).
fuzz-device-prep: qemu-san
	@mkdir -p $(FUZZ_DIR)
	@printf '#!/bin/sh\nexec bash %s %s "$$@"\n' \
	    $(CURDIR)/tests/fuzz/device.sh $(abspath $(QEMU_SAN_BUILD)) \
	    > $(FUZZ_DIR)/fuzz_device
	@chmod +x $(FUZZ_DIR)/fuzz_device
	@rm -rf $(FUZZ_DIR)/corpus-fuzz_device
	@python3 tests/fuzz/device-seeds.py include/rnic/rnic-abi.h \
	    $(FUZZ_DIR)/corpus-fuzz_device
	$(if $(DEVICE_CORPUS),@cp $(DEVICE_CORPUS) $(FUZZ_DIR)/corpus-fuzz_device/)

fuzz-device: fuzz-device-prep
	@bash tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_DEVICE_SECONDS) \
	    $(call FUZZ_SPECS,fuzz_device)

fuzz-smoke: fuzz-build fuzz-seeds fuzz-device-prep
	@bash tests/fuzz/run.sh $(FUZZ_DIR) 10 \
	    $(call FUZZ_SPECS,$(FUZZ_TARGETS) fuzz_device)
