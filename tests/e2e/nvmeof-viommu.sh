#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics (nvmeof.sh's two-guest mode) with each guest's rnic
# behind a vIOMMU (intel-iommu, the guests in strict mode): the kernel's
# fast registrations and the physical STag name IOVAs.
E2E_MACHINE_ARGS="-device intel-iommu" \
    E2E_KERNEL_ARGS="intel_iommu=on iommu.strict=1" \
    exec bash "$(dirname "$0")/nvmeof.sh" rnic
