# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest kernel (sourced): Debian's own image and modules unpacked into
# the cache, plus the matching headers installed on the host so that
# out-of-tree modules (siw.ko, rnic.ko) build with the right vermagic.
# Sets E2E_KVER, E2E_KDIR (headers), E2E_KROOT (unpacked image),
# E2E_VMLINUZ.  In bookworm one package holds the image and its modules.

e2e_headers_prep() {
    e2e_kver >/dev/null
    E2E_KDIR=/usr/src/linux-headers-$E2E_KVER
    e2e_apt_need "linux-headers-$E2E_KVER"
}

e2e_kernel_prep() {
    e2e_headers_prep
    E2E_KROOT=$E2E_OUT/kernel/$E2E_KVER
    E2E_VMLINUZ=$E2E_KROOT/boot/vmlinuz-$E2E_KVER
    e2e_debs_extract "$E2E_KROOT" "linux-image-$E2E_KVER"
    [ -f "$E2E_VMLINUZ" ] || e2e_die "no $E2E_VMLINUZ in linux-image-$E2E_KVER"
    # The host's depmod/modprobe resolve module dependencies in that tree.
    e2e_apt_need kmod
    [ -f "$E2E_KROOT/lib/modules/$E2E_KVER/modules.dep" ] ||
        depmod -b "$E2E_KROOT" "$E2E_KVER"
}
