# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest kernel (sourced): Debian's own image and modules unpacked into
# the cache, and its headers unpacked beside them, so that out-of-tree
# modules (siw.ko, rnic.ko) build with the right vermagic.  The headers
# are not installed: 6.12's headers package depends on its image, which
# would install a kernel on the host.
# Sets E2E_KVER, E2E_KDIR (headers), E2E_KROOT (unpacked image),
# E2E_VMLINUZ.  In bookworm one package holds the image and its modules.

# The packages kbuild needs for the headers of E2E_KVER: the headers, the
# common headers and linux-kbuild, whose name differs between lines
# (linux-kbuild-6.1, linux-kbuild-6.12.118+deb12).
e2e_headers_pkgs() {
    local cache=$E2E_OUT/headers/$E2E_KVER.pkgs
    if ! e2e_fresh "$cache"; then
        mkdir -p "$(dirname "$cache")"
        { echo "linux-headers-$E2E_KVER"
          apt-cache depends "linux-headers-$E2E_KVER" |
              sed -n 's/^ *Depends: \(linux-\(headers-.*-common\|kbuild-.*\)\)$/\1/p'
        } >"$cache.tmp"
        [ "$(wc -l <"$cache.tmp")" -eq 3 ] ||
            e2e_die "linux-headers-$E2E_KVER: no common headers or kbuild in its Depends"
        mv "$cache.tmp" "$cache"
    fi
    cat "$cache"
}

e2e_headers_prep() {
    local root mk pkgs
    e2e_kver >/dev/null
    root=$E2E_OUT/headers/$E2E_KVER
    E2E_KDIR=$root/usr/src/linux-headers-$E2E_KVER
    mapfile -t pkgs < <(e2e_headers_pkgs)
    e2e_debs_extract "$root" "${pkgs[@]}"
    # Its Makefile includes the common headers' by absolute path; the
    # links to kbuild's scripts are relative and hold in the unpacked tree.
    mk=$E2E_KDIR/Makefile
    sed -i "s|^include /usr/src/|include $root/usr/src/|" "$mk"
    [ -f "$(sed -n 's/^include //p' "$mk")" ] ||
        e2e_die "$mk includes no file of $root"
    # Where the headers carry vmlinux (6.12's do), kbuild gives a module
    # BTF, as Debian's own modules have; that takes pahole.
    e2e_apt_need pahole
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
