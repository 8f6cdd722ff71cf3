# SPDX-License-Identifier: GPL-2.0-or-later
#
# The packages a Debian VM with -device rnic installs: rnic-dkms (rnic.ko
# built by DKMS for the VM's kernel) and librnic (the libibverbs provider
# for the distribution's rdma-core), into build/guest-debs/.  Included from
# the top-level Makefile; tests/e2e/own-vm.sh installs them in two VMs.

.PHONY: guest-debs

guest-debs:
	bash guest-driver/packaging/build-debs.sh
