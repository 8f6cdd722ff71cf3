# SPDX-License-Identifier: GPL-2.0-or-later
#
# siw.ko for the guest kernel (sourced).  Debian's 6.1 image is built with
# CONFIG_RDMA_SIW unset, so the driver is compiled from Debian's own
# linux-source-6.1 against the matching headers.  Only the siw folder is
# taken out of the 140 MB tarball.  Sets E2E_SIW_KO.

e2e_siw_build() {
    local src=/usr/src/linux-source-6.1.tar.xz dir
    dir=$E2E_OUT/siw/$E2E_KVER
    E2E_SIW_KO=$dir/siw.ko
    [ -f "$E2E_SIW_KO" ] && [ "$E2E_SIW_KO" -nt "$src" ] && return 0
    e2e_apt_need linux-source-6.1
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xJf "$src" -C "$dir" --strip-components=5 \
        linux-source-6.1/drivers/infiniband/sw/siw
    make -s -C "$E2E_KDIR" M="$dir" CONFIG_RDMA_SIW=m modules >&2
    [ -f "$E2E_SIW_KO" ] || e2e_die "siw.ko did not build in $dir"
}

# A siw guest's initramfs: virtio-net, siw.ko, rdma_ucm, rdma-core's rping
# and the siw provider; the test on standard input.  Its /init can call
# e2e_siw_up ADDR (guest-lib.sh) to bring eth0 and siw0 up.
e2e_siw_initramfs() {
    e2e_initramfs "$1" -m virtio_pci -m virtio_net -m rdma_ucm \
        -k "$E2E_SIW_KO" -f /usr/bin/rping -f /usr/bin/rdma \
        -f /etc/libibverbs.d/siw.driver \
        -f /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so
}
