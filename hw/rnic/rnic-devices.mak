# SPDX-License-Identifier: GPL-2.0-or-later
# QEMU device set for rnic builds: q35, the rnic device, and what the test
# guests need (virtio-net on virtio-pci for the siw peer guest), PCIe
# root ports for hot-unplug, and intel-iommu for DMA through a vIOMMU.
# The main build (build/qemu) has QEMU's whole default set instead.
CONFIG_Q35=y
CONFIG_RNIC=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_PCIE_PORT=y
CONFIG_VTD=y
