# SPDX-License-Identifier: GPL-2.0-or-later
#
# siw.ko for the guest kernel (sourced).  Debian's images (6.1 and 6.12)
# are built with CONFIG_RDMA_SIW unset, so the driver is compiled from
# Debian's own linux-source of that line against the matching headers.
# Only the siw folder is taken out of the 140 MB tarball.  Sets E2E_SIW_KO.

e2e_siw_build() {
    local pkg=linux-source-$E2E_KERNEL dir
    local src=/usr/src/$pkg.tar.xz
    dir=$E2E_OUT/siw/$E2E_KVER
    E2E_SIW_KO=$dir/siw.ko
    [ -f "$E2E_SIW_KO" ] && [ "$E2E_SIW_KO" -nt "$src" ] && return 0
    e2e_apt_need "$pkg"
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xJf "$src" -C "$dir" --strip-components=5 \
        "$pkg/drivers/infiniband/sw/siw"
    make -s -C "$E2E_KDIR" M="$dir" CONFIG_RDMA_SIW=m modules >&2
    [ -f "$E2E_SIW_KO" ] || e2e_die "siw.ko did not build in $dir"
}

# The guest initramfs helpers' arguments as e2e_initramfs options, into
# the caller's args: a path of the Debian root becomes -f PATH, an option
# (-m MODULE, ...) is passed on as it is.
e2e_initramfs_args() {
    while [ $# -gt 0 ]; do
        case $1 in
        -?) args+=("$1" "$2"); shift 2 ;;
        *) args+=(-f "$1"); shift ;;
        esac
    done
}

# A siw guest's initramfs: virtio-net, siw.ko, rdma_ucm, rdma-core's rping
# and the siw provider, and what e2e_initramfs_args makes of the rest; the
# test on standard input.  Its /init can call e2e_siw_up ADDR
# (guest-lib.sh) to bring eth0 and siw0 up.
e2e_siw_initramfs() {
    local out=$1 args=()
    shift
    e2e_initramfs_args "$@"
    e2e_initramfs "$out" -m virtio_pci -m virtio_net -m rdma_ucm \
        -k "$E2E_SIW_KO" -f /usr/bin/rping -f /usr/bin/rdma \
        -f /etc/libibverbs.d/siw.driver \
        -f /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so \
        ${args[@]+"${args[@]}"}
}

# An rnic guest running rdma-core's own tools: rnic.ko with the RDMA
# stack's modules, librnic and its .driver file, and the programs named
# (e2e_initramfs_args), each with its libraries.  Needs
# e2e_librnic_build first.
e2e_rnic_verbs_initramfs() {
    local out=$1 args=()
    shift
    e2e_initramfs_args "$@"
    e2e_initramfs "$out" -k "$E2E_RNIC_KO" -m rdma_ucm -m ib_uverbs \
        -m iw_cm -f /usr/bin/rdma \
        -a "$E2E_LIBRNIC=/usr/lib/$E2E_MULTIARCH/librnic.so.1" \
        -l "../librnic.so.1=/usr/lib/$E2E_MULTIARCH/libibverbs/librnic-rdmav34.so" \
        -a "$E2E_TOP/guest-driver/librnic/rnic.driver=/etc/libibverbs.d/rnic.driver" \
        -a "$E2E_VERBS_BIN/verbs-abi-check=/usr/bin/verbs-abi-check" \
        -a "$E2E_VERBS_BIN/verbs-wr-check=/usr/bin/verbs-wr-check" \
        -a "$E2E_VERBS_BIN/verbs-event-check=/usr/bin/verbs-event-check" \
        -a "$E2E_VERBS_BIN/verbs-ops=/usr/bin/verbs-ops" \
        ${args[@]+"${args[@]}"}
}

# Two rnic guests' addresses, ports and device: net.1 and net.2, guest
# addresses 10.a.b.x that the default addr-map takes to the host's
# 127.a.b.x (a random a.b keeps concurrent runs on one host apart); port,
# the first of E2E_RNIC_PORTS consecutive free ports, the only ones the
# guests listen and connect on (a scenario's offsets from PORT stay below
# E2E_RNIC_PORTS; rdma-rnic.sh's go highest); and a -device rnic allowing
# those ports of both endpoints and nothing else (default deny), and each
# PORT argument too (nfsd's 20049).
# A rule without a port would let a guest send the private data of its
# MPA Requests to every service on the host's loopback (docs/spec.md,
# "Addresses").  Sets net, port, dev and rnic_io, which goes (unquoted)
# before every -device "$dev": with E2E_IOTHREAD=1 the IOThread object
# the device runs on (iothread=), with E2E_IOTHREAD_OPTS appended to it
# (",poll-max-ns=N", say).  E2E_MAIN_LOOP=1: the device on QEMU's main
# loop (main-loop=on) instead of the IOThread of its own it has by default.
E2E_RNIC_PORTS=16
e2e_rnic_pair() {
    local hosts ports p
    net=10.$((RANDOM % 200 + 50)).$((RANDOM % 250 + 1))
    port=$(e2e_free_ports "$E2E_RNIC_PORTS")
    hosts=127${net#10}.0/24
    # In -device, the comma between two rules is written twice.
    ports=$port-$((port + E2E_RNIC_PORTS - 1))
    for p; do ports+=",,$hosts:$p"; done
    dev="rnic,id=rnic0,listen-allow=$hosts:$ports,peer-allow=$hosts:$ports"
    rnic_io=""
    if [ "${E2E_IOTHREAD:-}" = 1 ]; then
        rnic_io="-object iothread,id=rnicio${E2E_IOTHREAD_OPTS:-}"
        dev="$dev,iothread=rnicio"
    fi
    if [ "${E2E_MAIN_LOOP:-}" = 1 ]; then
        dev="$dev,main-loop=on"
    fi
}

# siw's connection behaviour is set by constants in siw_main.c and
# siw_cm.c that deployments change.  A variant is siw.ko built from the
# same linux-source with some of them changed; its edits, one per line as
# FILE|SED-EXPRESSION (s/// without flags), each of which must match, or
# patch|FILE: a kernel patch of ours (tests/e2e/siw-patches/) applied.
e2e_siw_variant_edits() {
    local p2p='siw_main.c|s/^const bool peer_to_peer;/const bool peer_to_peer = true;/'
    local rtr='siw_cm.c|s/^static __be16 rtr_type = .*;/static __be16 rtr_type ='
    case $1 in
    crc-required)
        echo 'siw_main.c|s/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' ;;
    crc-strict)
        echo 'siw_main.c|s/^const bool mpa_crc_strict;/const bool mpa_crc_strict = true;/' ;;
    rev1)
        echo 'siw_main.c|s/^u_char mpa_version = MPA_REVISION_2;/u_char mpa_version = MPA_REVISION_1;/' ;;
    p2p-write) echo "$p2p"; echo "$rtr MPA_V2_RDMA_WRITE_RTR;/" ;;
    p2p-read) echo "$p2p"; echo "$rtr MPA_V2_RDMA_READ_RTR;/" ;;
    p2p-both) echo "$p2p"; echo "$rtr MPA_V2_RDMA_READ_RTR | MPA_V2_RDMA_WRITE_RTR;/" ;;
    p2p-none) echo "$p2p"; echo "$rtr MPA_V2_RDMA_NO_RTR;/" ;;
    accept-fix)     # siw reads what came before its QP took the socket
        echo "patch|0001-RDMA-siw-read-data-that-arrived-before-the-QP-took-the-socket.patch" ;;
    *) e2e_die "no siw variant $1" ;;
    esac
}

# e2e_siw_variant NAME: builds (or finds) that variant; sets E2E_SIW_KO.
e2e_siw_variant() {
    local name=$1 base dir edits line file expr
    e2e_siw_build
    base=$(dirname "$E2E_SIW_KO")
    dir=$E2E_OUT/siw/$E2E_KVER-$name
    edits=$(e2e_siw_variant_edits "$name")
    E2E_SIW_KO=$dir/siw.ko
    if [ -f "$E2E_SIW_KO" ] && [ "$E2E_SIW_KO" -nt "$base/siw.ko" ] &&
       [ "$(cat "$dir/.variant" 2>/dev/null)" = "$edits" ]; then
        return 0
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$base"/*.[ch] "$base/Makefile" "$base/Kconfig" "$dir/"
    while IFS= read -r line; do
        file=${line%%|*} expr=${line#*|}
        if [ "$file" = patch ]; then
            # The patch's paths are the kernel tree's: a/drivers/.../siw/
            patch -s -p5 -d "$dir" <"$E2E_TOP/tests/e2e/siw-patches/$expr" ||
                e2e_die "siw variant $name: $expr does not apply"
            continue
        fi
        # w: the lines substituted, so that a pattern that no longer
        # matches the source fails instead of building plain siw.
        sed -i "${expr}w $dir/.hit" "$dir/$file"
        [ -s "$dir/.hit" ] ||
            e2e_die "siw variant $name: '$expr' matches nothing in $file"
    done <<<"$edits"
    e2e_log "building siw variant $name"
    make -s -C "$E2E_KDIR" M="$dir" CONFIG_RDMA_SIW=m modules >&2
    [ -f "$E2E_SIW_KO" ] || e2e_die "siw variant $name did not build in $dir"
    echo "$edits" >"$dir/.variant"
}
