# SPDX-License-Identifier: GPL-2.0-or-later
#
# Top-level build: the protocol core and its unit tests are built here;
# QEMU (with the rnic device laid into it by ./configure) is built by ninja
# under build/qemu.  See README.md.

BUILD      := build
SHELL      := /bin/bash
-include $(BUILD)/config.mk

CC         ?= cc
CORE_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wmissing-prototypes \
               -Wstrict-prototypes -Wvla -Wundef -Wshadow
ifeq ($(SANITIZE),1)
CORE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
SAN_DIR    := -san
endif
OBJ        := $(BUILD)/obj$(SAN_DIR)

CORE_SRCS  := $(addprefix core/,$(shell grep -v '^\#' core/sources.txt))
CORE_OBJS  := $(CORE_SRCS:%.c=$(OBJ)/%.o)
CORE_LIB   := $(OBJ)/librnic-core.a

UNIT_SRCS  := $(wildcard tests/unit/*.c tests/unit/support/*.c)
UNIT_OBJS  := $(UNIT_SRCS:%.c=$(OBJ)/%.o)
UNIT_BIN   := $(OBJ)/tests/unit/rnic-unit
UNIT_LIBS  := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck) -lpcap -lpthread
INCLUDES   := -Icore -Iinclude -Itests/unit

QEMU_BIN   := $(BUILD)/qemu-system-x86_64
# Debian's firmware packages; QEMU run from its build folder looks for its
# --firmwarepath under qemu-bundle/, so they are linked there.
FIRMWARE_DIRS := /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu
# Our files inside QEMU's build: QEMU builds without -Werror, we do not.
OUR_QEMU_FILES := (hw/rnic|rnic-core|qtest/rnic|libqos/rnic)
# qtests-in RUN: the qtests of tests/qtest/qtests.txt that belong to RUN.
qtests-in = $(shell awk '!/^\#/ && / $(1)( |$$)/ { print $$1 }' \
              tests/qtest/qtests.txt)
RNIC_QTESTS := $(call qtests-in,check)
CAPTURE_QTESTS := $(call qtests-in,capture)
# make check-qtest: QEMU's own device-introspect-test, and qos-test, which
# walks the qgraph node "rnic" and runs the qos tests of qtests.txt; and
# our qtests but those that move data, which check-capture runs on this
# build, recording (each qtest runs once per build).
QTESTS     := $(filter-out $(CAPTURE_QTESTS),$(RNIC_QTESTS)) \
              device-introspect-test $(if $(call qtests-in,qos),qos-test)
# The sanitizer build (build/qemu-san) reports through these: a finding
# kills QEMU, so the qtest that drove it fails.  Leaks at exit are QEMU's
# own and not what this build is for.
SAN_ENV    := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
              UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all core qemu qemu-san qemu-tsan check check-aggregator check-names \
        check-unit check-unit-san check-qemu check-spec check-qtest check-qtest-san \
        check-tsan check-capture run lint clean distclean need-configure

all: core qemu

core: $(CORE_LIB)

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CORE_CFLAGS) $(INCLUDES) -MMD -MP -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(UNIT_BIN): $(UNIT_OBJS) $(CORE_LIB)
	$(CC) $(CORE_CFLAGS) -o $@ $(UNIT_OBJS) $(CORE_LIB) $(UNIT_LIBS)

-include $(CORE_OBJS:.o=.d) $(UNIT_OBJS:.o=.d)

# Fails with a clear message when ./configure has not run.
need-configure:
	@test -f $(BUILD)/config.mk || \
	  { echo "make: QEMU is not configured; run ./configure (see README.md)"; exit 1; }

# ninja-ours DIR TARGETS: builds in a QEMU build folder; a warning in one
# of our files fails the build (QEMU itself builds without -Werror), and
# so does one that GCC places in a system header our code inlined from.
define ninja-ours
	@set -o pipefail; ninja -C $(1) $(2) 2>&1 | tee $(1)-build.log
	@! grep -E '$(OUR_QEMU_FILES)[^ :]*:[0-9]+:[0-9]+: warning|inlined from .* at [^ ]*$(OUR_QEMU_FILES)' \
	    $(1)-build.log || \
	    { echo "make: warnings in our code are errors (above)"; exit 1; }
endef

# QEMU run from its build folder looks for --firmwarepath under qemu-bundle/.
define link-firmware
	@for d in $(FIRMWARE_DIRS); do \
	    mkdir -p $(1)/qemu-bundle$$(dirname $$d); \
	    ln -sfn $$d $(1)/qemu-bundle$$d; \
	done
endef

# run-qtests DIR TESTS: builds the qtests in DIR and runs them.
# rnic-peer-test takes ~40 s of meson's 60 s on a quiet machine with the
# sanitizers on: a busy one must not turn that into a failure.
define run-qtests
	$(call ninja-ours,$(1),$(2:%=tests/qtest/%))
	cd $(1) && $(SAN_ENV) /usr/bin/meson test --no-rebuild --print-errorlogs \
	    --timeout-multiplier 3 $(2:%=qtest-x86_64/%)
endef

# Laying the device again is cheap and picks up new test files.
qemu: need-configure
	@bash scripts/lay-device.sh $(QEMU_SRC) $(CURDIR)
	$(call ninja-ours,$(QEMU_BUILD),qemu-system-x86_64)
	@ln -sf qemu/qemu-system-x86_64 $(QEMU_BIN)
	$(call link-firmware,$(QEMU_BUILD))

# The same QEMU with ASan, UBSan and libFuzzer (clang): for the qtests
# under sanitizers and for fuzzing the device (make fuzz-device).
qemu-san: need-configure
	@bash scripts/lay-device.sh $(QEMU_SRC) $(CURDIR)
	$(call ninja-ours,$(QEMU_SAN_BUILD),qemu-system-x86_64 qemu-fuzz-x86_64)
	$(call link-firmware,$(QEMU_SAN_BUILD))

# The same QEMU with ThreadSanitizer, and the qtests make check-tsan runs.
TSAN_QTESTS := $(call qtests-in,tsan)
qemu-tsan: need-configure
	@bash scripts/lay-device.sh $(QEMU_SRC) $(CURDIR)
	$(call ninja-ours,$(QEMU_TSAN_BUILD),qemu-system-x86_64 \
	    $(TSAN_QTESTS:%=tests/qtest/%) tests/qtest/rnic-soak-test)
	$(call link-firmware,$(QEMU_TSAN_BUILD))

# The threading contract (hw/rnic/rnic-thread.c) checked by TSan.
check-tsan: qemu-tsan
	@bash tests/tsan/run.sh $(QEMU_SRC) $(QEMU_TSAN_BUILD) $(TSAN_QTESTS)

# The parts of make check, in order; CHECK_PARTS="check-unit check-spec"
# runs only those, through the same aggregator.
CHECK_PARTS ?= check-aggregator check-allow check-names check-driver check-unit \
    check-unit-san check-qemu check-spec check-qtest check-qtest-san check-tsan \
    check-capture fuzz-smoke check-soak check-e2e
check:
	@bash scripts/check-all.sh $(CHECK_PARTS)

# make check's aggregator exits non-zero exactly when a part fails.
# Ends with "aggregator: N passed, N failed".
check-aggregator:
	@bash tests/check/aggregator-test.sh

# No function or header name used twice in core/, hw/, guest-driver/,
# include/.  Ends with "names: N passed, N failed".
check-names:
	@python3 scripts/check-names.py

# The QEMU we build runs users' VMs: KVM and TCG, the default devices
# and rnic on q35 and pc.
check-qemu: qemu
	@bash tests/qemu/device-set.sh $(QEMU_BIN)

# docs/spec.md against rnic-abi.h and against the device (tests/spec/).
check-spec: qemu
	@bash tests/spec/run.sh $(QEMU_BIN) $(BUILD)/spec

# The unit tests again under AddressSanitizer and UBSan, in one process:
# LeakSanitizer scans the heap at every exit, which in Check's fork mode
# (a process per test) took 0.14 s a test, 3 of the 4 minutes this run
# took.  Leaks are still found, at the one exit; timeout takes the place
# of Check's per-test timer, which needs fork mode.
check-unit-san:
	@$(MAKE) --no-print-directory check-unit SANITIZE=1 CHECK_UNIT_RUN="timeout 900" \
	    CK_FORK=no

# A process per test (Check's fork mode) unless check-unit-san says not.
CK_FORK ?= yes
# Check stops a test after 4 s; under ASan on a busy machine the MPA
# negotiation table took 6.4 s.
check-unit: $(UNIT_BIN)
	cd $(BUILD) && CK_FORK=$(CK_FORK) CK_TIMEOUT_MULTIPLIER=5 $(CHECK_UNIT_RUN) $(abspath $(UNIT_BIN))

check-qtest: qemu
	$(call run-qtests,$(QEMU_BUILD),$(QTESTS))

# Our qtests on the sanitizer build: a use-after-free in hw/rnic fails them.
check-qtest-san: qemu-san
	$(call run-qtests,$(QEMU_SAN_BUILD),$(RNIC_QTESTS))

# The qtests that move data, each device recording its traffic; tshark
# decodes every capture and it must match the device's statistics.
check-capture: qemu
	$(call ninja-ours,$(QEMU_BUILD),$(CAPTURE_QTESTS:%=tests/qtest/%))
	@QEMU_BUILD=$(abspath $(QEMU_BUILD)) CAPTURE_QTESTS="$(CAPTURE_QTESTS)" \
	    bash tests/capture/run.sh

# The worked examples of docs/debugging.md, one command each:
# make debug-example-read-stag, -cq-not-armed, -no-receive.
debug-example-%: need-configure
	@{ $(MAKE) --no-print-directory qemu && \
	   ninja -C $(QEMU_BUILD) tests/qtest/rnic-dp-test; } > $(BUILD)/example-build.log 2>&1 || \
	    { cat $(BUILD)/example-build.log; exit 1; }
	@QEMU_BUILD=$(abspath $(QEMU_BUILD)) bash tests/debug/example.sh $*

# The quick look: start QEMU with the device (on KVM where the host has a
# usable one: scripts/accel.sh), let the firmware assign its BARs, then
# show the PCI bus as the monitor's `info pci` sees it.
run: qemu
	@accel=$$(bash scripts/accel.sh) && \
	echo "make run: $(QEMU_BIN) -M q35 -accel $$accel -device rnic; 'info pci' after 2 s:" && \
	(sleep 2; printf 'info pci\nquit\n') | $(QEMU_BIN) -M q35 -accel $$accel \
	    -nodefaults -display none -device rnic -monitor stdio 2>&1 | \
	    grep -v -e '^(qemu)' -e '^QEMU .* monitor'

# QEMU's checkpatch on our files that live in QEMU's tree.
LINT_QEMU := $(wildcard hw/rnic/*.[ch] tests/qtest/rnic*.c tests/qtest/libqos/rnic*.[ch] \
               tests/bench/device-bench.c)
lint: need-configure
	@for f in $(LINT_QEMU); do \
	    perl $(QEMU_SRC)/scripts/checkpatch.pl --no-tree -q -f $$f || exit 1; \
	done; echo "lint: QEMU checkpatch clean on $(words $(LINT_QEMU)) files"

include mk/e2e.mk
include mk/guest-debs.mk

clean:
	rm -rf $(BUILD)/obj $(BUILD)/obj-san
	-test -f $(BUILD)/qemu/build.ninja && ninja -C $(QEMU_BUILD) clean

distclean:
	rm -rf $(BUILD)

-include tests/fuzz/fuzz.mk
-include tests/bench/bench.mk
