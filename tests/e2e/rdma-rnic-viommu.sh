#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic.sh with each guest's rnic behind a vIOMMU (intel-iommu, the
# guests in strict mode): every descriptor, ring and buffer address the
# driver and librnic give the device is an IOVA, in direct mode and not.
E2E_MACHINE_ARGS="-device intel-iommu" \
    E2E_KERNEL_ARGS="intel_iommu=on iommu.strict=1" \
    E2E_NAME=rdma-rnic-viommu exec bash "$(dirname "$0")/rdma-rnic.sh"
