#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make guest-debs: the two packages a Debian VM with -device rnic installs,
# into $GUEST_DEBS_OUT (build/guest-debs):
#   rnic-dkms   rnic.ko's source for DKMS, built on the VM for its kernel,
#               on install and again on every kernel upgrade
#   librnic     the libibverbs provider and its .driver file, loaded by
#               the distribution's own rdma-core (provider ABI 34:
#               Debian 12's libibverbs 44.0 and Debian 13's 56.1); the
#               provider is librnic.so.1, which programs using rnic's own
#               verbs link (infiniband/rnicdv.h, -lrnic)
# Plain dpkg-deb, no debhelper: the packages are small and their layout
# is spelled out here.  librnic is built as the e2e scenarios build it
# (tests/e2e/lib/librnic.sh, inside rdma-core's source).
#   build-debs.sh            build both; print their paths
#   build-debs.sh --version  print the version only
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${GUEST_DEBS_OUT:-$top/build/guest-debs}

die() { echo "guest-debs: error: $*" >&2; exit 1; }

# The one version of both packages: the device ABI the driver and the
# provider speak (include/rnic/rnic-abi.h), then the number of commits, so
# that every later build of main is a newer package and apt upgrades it.
debs_version() {
    local abi=$top/include/rnic/rnic-abi.h major minor n
    major=$(sed -n 's/^#define RNIC_ABI_MAJOR *\([0-9]*\).*/\1/p' "$abi")
    minor=$(sed -n 's/^#define RNIC_ABI_MINOR *\([0-9]*\).*/\1/p' "$abi")
    [ -n "$major" ] && [ -n "$minor" ] || die "no RNIC_ABI_MAJOR/MINOR in $abi"
    n=$(git -C "$top" rev-list --count HEAD 2>/dev/null) || n=0
    echo "$major.$minor.$n"
}

# Who the packages name as their maintainer: whoever made the commit they
# are built from (Debian's DEBFULLNAME/DEBEMAIL override it).
debs_maintainer() {
    local name email
    name=${DEBFULLNAME:-$(git -C "$top" log -1 --format=%an 2>/dev/null || true)}
    email=${DEBEMAIL:-$(git -C "$top" log -1 --format=%ae 2>/dev/null || true)}
    echo "${name:-rnic developers} <${email:-root@localhost}>"
}

# The years of the first and the newest commit, for the copyright notice.
debs_years() {
    local first last
    first=$(git -C "$top" log --reverse --format=%ad --date=format:%Y 2>/dev/null | head -n1)
    last=$(git -C "$top" log -1 --format=%ad --date=format:%Y 2>/dev/null)
    if [ -z "$first" ]; then date +%Y
    elif [ "$first" = "$last" ]; then echo "$first"
    else echo "$first-$last"
    fi
}

# The documentation every Debian package carries: the licence (the
# project's, GPL-2.0-or-later) and a changelog of one entry (changelog.gz:
# the version has no Debian revision, so the packages are native).
debs_doc() {    # ROOT PACKAGE
    local doc=$1/usr/share/doc/$2
    mkdir -p "$doc"
    cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rnic

Files: *
Copyright: $(debs_years) the rnic authors
License: GPL-2.0-or-later
 On Debian systems the full text of the GNU General Public License
 version 2 is in /usr/share/common-licenses/GPL-2.
EOF
    printf '%s (%s) unstable; urgency=medium\n\n  * Built from the rnic repository.\n\n -- %s  %s\n' \
        "$2" "$version" "$maintainer" "$(date -R)" |
        gzip -9n >"$doc/changelog.gz"
}

# debs_control ROOT PACKAGE ARCH FIELDS...: DEBIAN/control with the
# common fields, the package's own (one "Name: value" a line, the
# Description last) and its installed size.
debs_control() {
    local root=$1 pkg=$2 arch=$3; shift 3
    mkdir -p "$root/DEBIAN"
    {
        echo "Package: $pkg"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
        printf '%s\n' "$@"
    } >"$root/DEBIAN/control"
}

# debs_script SRC ROOT NAME: a maintainer script with its version filled in.
debs_script() {
    sed "s/@VERSION@/$version/g" "$1" >"$2/DEBIAN/$3"
    chmod 0755 "$2/DEBIAN/$3"
}

debs_build() {  # ROOT: the .deb into $out, files owned by root
    local deb
    # DEBIAN/md5sums: what debsums and dpkg --verify check against.
    (cd "$1" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
        xargs -0 md5sum) >"$1/DEBIAN/md5sums"
    deb=$out/$(sed -n 's/^Package: //p' "$1/DEBIAN/control")_${version}_$(sed -n 's/^Architecture: //p' "$1/DEBIAN/control").deb
    dpkg-deb --root-owner-group -Zxz --build "$1" "$deb" >/dev/null
    echo "$deb"
}

# rnic-dkms: the driver's sources and the headers they include, in the
# repository's layout (dkms.conf says why), under /usr/src/rnic-VERSION:
# the same files every build of ours compiles (tests/e2e/lib/driver.sh),
# and the Makefile DKMS runs.
dkms_stage() {
    local root=$1 src
    src=$root/usr/src/rnic-$version
    e2e_driver_sync "$src"
    install -m 0644 "$top/guest-driver/linux/Makefile" "$src/guest-driver/linux/"
    chmod -R u=rwX,go=rX "$src"
    sed "s/@VERSION@/$version/g" "$here/dkms/dkms.conf" >"$src/dkms.conf"
    debs_doc "$root" rnic-dkms
    debs_control "$root" rnic-dkms all \
        "Depends: dkms" \
        "Section: kernel" \
        "Priority: optional" \
        "Description: rnic software iWARP RDMA NIC (QEMU) - guest kernel driver (DKMS)" \
        " rnic is a PCI device for QEMU (-device rnic) that behaves like an" \
        " iWARP RDMA NIC.  This package has the source of its Linux driver," \
        " rnic.ko, which DKMS builds for every installed kernel and again" \
        " whenever a kernel is installed or upgraded."
    debs_script "$here/dkms/postinst" "$root" postinst
    debs_script "$here/dkms/prerm" "$root" prerm
}

# librnic: the provider from rdma-core's tree, stripped as Debian strips
# shared objects, and without the build tree's RUNPATH (libibverbs.so.1
# is on the loader's path in the VM).  One file, librnic.so.1, is both
# the provider libibverbs loads (through a symlink) and the library
# rnicdv.h's programs link: one copy in a process.
librnic_stage() {
    local root=$1 multiarch so arch libc
    . "$E2E_LIB/initramfs.sh"
    . "$E2E_LIB/userland.sh"
    . "$E2E_LIB/librnic.sh"
    e2e_apt_need patchelf
    e2e_userland_prep
    e2e_librnic_build
    arch=$(dpkg --print-architecture)
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
    [ "$multiarch" = "$E2E_MULTIARCH" ] ||
        die "host multiarch ${multiarch:-?} is not the guests' $E2E_MULTIARCH"
    so=$root/usr/lib/$multiarch/librnic.so.1
    install -D -m 0644 "$E2E_LIBRNIC" "$so"
    patchelf --remove-rpath "$so"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$so"
    mkdir -p "$root/usr/lib/$multiarch/libibverbs"
    ln -s ../librnic.so.1 "$root/usr/lib/$multiarch/libibverbs/librnic-rdmav34.so"
    ln -s librnic.so.1 "$root/usr/lib/$multiarch/librnic.so"
    install -D -m 0644 "$top/guest-driver/librnic/rnicdv.h" \
        "$root/usr/include/infiniband/rnicdv.h"
    install -D -m 0644 "$top/guest-driver/librnic/rnic.driver" \
        "$root/etc/libibverbs.d/rnic.driver"
    # Files under /etc are the administrator's: dpkg keeps their edits.
    mkdir -p "$root/DEBIAN"
    echo /etc/libibverbs.d/rnic.driver >"$root/DEBIAN/conffiles"
    # The newest glibc symbol version it uses is the libc6 it needs.
    libc=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' |
           sort -V | tail -n1)
    debs_doc "$root" librnic
    debs_control "$root" librnic "$arch" \
        "Depends: libc6 (>= $libc), libibverbs1 (>= 44)" \
        "Multi-Arch: same" \
        "Section: libs" \
        "Priority: optional" \
        "Description: rnic software iWARP RDMA NIC (QEMU) - libibverbs provider" \
        " rnic is a PCI device for QEMU (-device rnic) that behaves like an" \
        " iWARP RDMA NIC.  This package has its userspace driver for" \
        " libibverbs (provider ABI 34), so that the distribution's rdma-core" \
        " tools and applications use the device: rdma_cm, rping, perftest;" \
        " and rnic's own verbs (infiniband/rnicdv.h, -lrnic)."
}

version=$(debs_version)
if [ "${1:-}" = --version ]; then
    echo "$version"
    exit 0
fi
# shellcheck source-path=SCRIPTDIR/../../tests/e2e/lib
. "$top/tests/e2e/lib/common.sh"
. "$E2E_LIB/driver.sh"
maintainer=$(debs_maintainer)
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage/dkms" "$stage/librnic"
# Older builds' packages would be found next to these ones.
rm -f "$out"/rnic-dkms_*.deb "$out"/librnic_*.deb
dkms_stage "$stage/dkms"
librnic_stage "$stage/librnic"
debs_build "$stage/dkms"
debs_build "$stage/librnic"
rm -rf "$stage"
