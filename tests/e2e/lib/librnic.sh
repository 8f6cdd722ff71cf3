# SPDX-License-Identifier: GPL-2.0-or-later
#
# librnic, the libibverbs provider of rnic, for the guests (sourced).
# Debian's libibverbs-dev has no infiniband/driver.h (the private API a
# provider is written against), so the provider is built inside an
# rdma-core source tree, fetched with apt-get source as ./configure
# fetches QEMU's.  Only libibverbs and the provider are compiled (seconds).
#
# Why rdma-core 56.1 (trixie's source) when the guests run bookworm's
# libibverbs 44.0: the package mirror CI reaches serves no
# rdma-core_44.0.orig.tar.gz (404), while 56.1's tarball is there.  Both
# have provider ABI 34 (IBVERBS_PRIVATE_34, librnic-rdmav34.so): 44's
# libibverbs loads a provider built in 56.1, and every private symbol the
# provider calls exists in 44.  What 56.1 did change is the public layout
# of two structs (struct ibv_qp_ex gained wr_flush, so verbs_qp's
# comp_mask moved; struct ibv_port_attr gained active_speed_ex), so the
# provider is compiled against the public headers of the guests' own
# libibverbs-dev; only driver.h and its private companions come from 56.1.
# tests/e2e/verbs-abi-check.c, built here against those same headers and
# the guests' libibverbs, checks in the guest what depends on it.  See
# docs/driver-guide.md ("librnic").
#
# The version and the tarball's sha256 are pinned here (apt checks the
# download against its signed index as well); the mirror also lacks 56.1's
# .dsc, so the upstream tarball is fetched alone (--tar-only) and
# unpacked: Debian's 56.1-1 patches touch only the mana provider.
# E2E_RDMA_CORE_SRC=DIR uses an unpacked rdma-core tree of a provider ABI
# 34 version instead.  Sets E2E_LIBRNIC (librnic.so.1: the provider, which
# programs using rnicdv.h link too), E2E_RNICDV_INC (where
# infiniband/rnicdv.h is) and E2E_VERBS_BIN.

E2E_RDMA_CORE_VER=56.1-1
E2E_RDMA_CORE_TAR=rdma-core_56.1.orig.tar.gz
E2E_RDMA_CORE_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8

e2e_rdma_core_src() {
    local dest=$1 dl=$E2E_OUT/rdma-core/dl
    if [ -n "${E2E_RDMA_CORE_SRC:-}" ]; then
        cp -a "$E2E_RDMA_CORE_SRC/." "$dest"
        return
    fi
    rm -rf "$dl"
    mkdir -p "$dl"
    # apt drops root for downloads; let its _apt user write here.
    chmod 0777 "$dl"
    (cd "$dl" && apt-get source -q --download-only --tar-only \
        "rdma-core=$E2E_RDMA_CORE_VER" >&2) ||
        e2e_die "apt-get source rdma-core=$E2E_RDMA_CORE_VER failed: add the trixie deb-src entry (./configure --install-deps); if 'apt-cache showsrc rdma-core' no longer lists $E2E_RDMA_CORE_VER, pin the version trixie has now (and its tarball's sha256) here; or set E2E_RDMA_CORE_SRC to an unpacked rdma-core tree"
    echo "$E2E_RDMA_CORE_SHA256  $dl/$E2E_RDMA_CORE_TAR" | sha256sum -c --quiet ||
        e2e_die "$E2E_RDMA_CORE_TAR does not have the pinned sha256"
    tar -xzf "$dl/$E2E_RDMA_CORE_TAR" -C "$dest" --strip-components=1 ||
        e2e_die "unpacking $E2E_RDMA_CORE_TAR failed"
    rm -rf "$dl"
}

e2e_librnic_build() {
    local tag src bld prov abi
    tag=${E2E_RDMA_CORE_SRC:+local}
    tag=${tag:-$E2E_RDMA_CORE_VER}
    src=$E2E_OUT/rdma-core/src-$tag
    bld=$E2E_OUT/rdma-core/build-$tag
    abi=$E2E_OUT/rdma-core/guest-dev
    prov=$src/providers/rnic
    E2E_LIBRNIC=$bld/lib/librnic.so.1
    E2E_RNICDV_INC=$bld/rnicdv-include
    if [ ! -f "$src/CMakeLists.txt" ]; then
        rm -rf "$src" "$bld"
        mkdir -p "$src"
        e2e_rdma_core_src "$src"
    fi
    grep -q '^set(IBVERBS_PABI_VERSION "34")' "$src/CMakeLists.txt" ||
        e2e_die "rdma-core in $src is not of provider ABI 34 (the guests' libibverbs)"
    # The public headers of the libibverbs the guests run (verbs.h and
    # what it includes), ahead of the tree's own: see the top comment.
    e2e_debs_extract "$abi" libibverbs-dev librdmacm-dev
    # The provider's files, the device ABI header, and its line in the
    # top-level CMakeLists.txt; cp -u keeps ninja's view of what changed.
    mkdir -p "$prov"
    cp -u "$E2E_TOP"/guest-driver/librnic/* "$E2E_TOP/include/rnic/rnic-abi.h" \
        "$E2E_TOP/guest-driver/rnic-ib-uapi.h" "$prov/"
    # An earlier layout's build: the provider was a module then.
    if [ -f "$bld/build.ninja" ] && ! grep -q 'librnic\.so' "$bld/build.ninja"; then
        rm -rf "$bld"
    fi
    grep -q '^add_subdirectory(providers/rnic)$' "$src/CMakeLists.txt" ||
        sed -i 's|^add_subdirectory(providers/rxe)$|add_subdirectory(providers/rnic)\n&|' \
            "$src/CMakeLists.txt"
    if [ ! -f "$bld/build.ninja" ]; then
        e2e_apt_need cmake ninja-build pkgconf python3
        mkdir -p "$bld"
        (cd "$bld" && cmake -G Ninja -DENABLE_RESOLVE_NEIGH=0 -DNO_PYVERBS=1 \
            -DNO_MAN_PAGES=1 -DENABLE_STATIC=0 -DCMAKE_BUILD_TYPE=Release \
            -DRNIC_GUEST_INCLUDE="$abi/usr/include" "$src" >&2) ||
            e2e_die "cmake of rdma-core failed in $bld"
    fi
    ninja -C "$bld" rnic >&2 ||
        e2e_die "librnic did not build (in $bld)"
    # rnicdv.h alone, so that test programs take every other header from
    # the guests' libibverbs-dev.
    mkdir -p "$E2E_RNICDV_INC/infiniband"
    cp -u "$prov/rnicdv.h" "$E2E_RNICDV_INC/infiniband/"
    e2e_verbs_check_build "$abi/usr/include"
}

# tests/e2e/verbs-*.c (verbs-abi-check, verbs-wr-check, ...) against the
# guests' libibverbs and librdmacm (headers in INCLUDE, the libraries of
# the unpacked guest root) and librnic, into $E2E_VERBS_BIN.
e2e_verbs_check_build() {
    local lib=$E2E_USERLAND/usr/lib/$E2E_MULTIARCH c out
    E2E_VERBS_BIN=$E2E_OUT/rdma-core/bin
    mkdir -p "$E2E_VERBS_BIN"
    for c in "$E2E_TOP"/tests/e2e/verbs-*.c; do
        out=$E2E_VERBS_BIN/$(basename "$c" .c)
        [ -f "$out" ] && [ "$out" -nt "$c" ] && [ "$out" -nt "$E2E_LIBRNIC" ] &&
            continue
        gcc -O2 -Wall -Wextra -Werror -I"$1" -I"$E2E_RNICDV_INC" \
            -I"$E2E_TOP/include" -o "$out" "$c" -Wl,--as-needed \
            "$lib/librdmacm.so.1" "$lib/libibverbs.so.1" "$E2E_LIBRNIC" \
            -Wl,-rpath-link="$lib:$E2E_USERLAND/lib/$E2E_MULTIARCH" >&2 ||
            e2e_die "$(basename "$c") did not build"
    done
}
