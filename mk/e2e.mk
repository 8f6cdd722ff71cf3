# SPDX-License-Identifier: GPL-2.0-or-later
#
# End-to-end tests: real Linux guests (Debian's kernel, under TCG) booted
# with -device rnic or as siw peers.  Included from the top-level Makefile.
# Everything they download or build is cached under build/e2e/; see
# tests/e2e/lib/ for how.

E2E_DIR := tests/e2e

.PHONY: e2e-prep e2e check-e2e check-allow guest-driver check-driver demo

# The scenarios `make check` runs: those that fit CI's time and do not
# depend on a reference peer's timing.  migrate-paths boots no guest: the
# migration scenarios' sockets from a clone deeper than a socket's path.  Of the siw variants, p2p-both,
# the RFC 6581 negotiation in both roles: siw's peer-to-peer client (Write
# and Read RTR offered) against rnic's server, and rnic's peer-to-peer
# client against siw, Debian's rping on both, MPA CRC off (about 45 s).
# rnic against stock siw with MPA CRC required by the rnic, rping and
# perftest both ways (50 to 80 s).  Of NVMe over Fabrics, the kernel's
# own RDMA user (fast registration, Read with Invalidate), one guest's
# target and host on its own rnic, once with the target's shared receive
# queues.  On the 6.12 kernel line, rdma-core's tools between two rnic
# guests (user CQs and mmap, where 6.12's API differs; about 20 s).
# rdma-core's own test suite on rnic and on siw, side by side (about 90 s).
# Live migration of an rnic guest in the middle of a verified rping, its
# connection moved by TCP repair and by cpr-transfer (about 70 s each).
E2E_CHECK := migrate-paths.sh driver-probe.sh rnic-rnic.sh rnic-rnic-main-loop.sh \
             rnic-siw-variants.sh:p2p-both rdma-rnic-siw-crc.sh \
             rdma-rnic.sh rdma-rnic-main-loop.sh:short \
             rdma-rnic-viommu.sh rdma-rnic-companion.sh rdma-rnic-fail.sh \
             nvmeof.sh:loop,srq rdma-rnic-6.12.sh rdma-core-suite.sh \
             rnic-migrate.sh:repair,rnic rnic-migrate.sh:cpr,rnic

# Guest kernel and modules, headers, siw.ko, rnic.ko, guest user space.
e2e-prep:
	bash $(E2E_DIR)/prep.sh

# Every scenario; fails if one does; ends with "e2e: N passed, N failed".
e2e: qemu e2e-prep
	bash $(E2E_DIR)/run-all.sh
	$(MAKE) --no-print-directory soak

check-e2e: qemu e2e-prep
	bash $(E2E_DIR)/run-all.sh $(E2E_CHECK)

# Every listen-allow and peer-allow rule of the documented setups (docs,
# Makefiles, e2e and fuzz scripts) names its ports; no build needed.
# Ends with "allow: N passed, N failed".
check-allow:
	@bash $(E2E_DIR)/check-allow.sh

# rnic.ko against the headers of the kernel the guests run.
guest-driver:
	$(MAKE) -C guest-driver/linux KDIR=$$(bash $(E2E_DIR)/prep.sh --kdir)

# rnic.ko against the headers of every kernel line the guests run (6.1 and
# 6.12), with -Werror and no warning, each built in build/driver/VERSION/.
# Ends with "driver: N passed, N failed".
check-driver:
	@bash tests/driver/check-build.sh

# Two guests with -device rnic doing RDMA through rnic.ko and verbs-ops,
# told in a few lines: operations, bytes, bandwidth, latency.
demo: qemu e2e-prep
	bash $(E2E_DIR)/demo.sh
