# SPDX-License-Identifier: GPL-2.0-or-later
#
# Builds a guest's initramfs (sourced): busybox-static as the whole base
# system, the kernel modules asked for with their dependencies, user-space
# binaries from the unpacked Debian root with their shared libraries, the
# guest-side helpers (guest-lib.sh) and the test's own /init.
#
#   e2e_initramfs OUT.cpio.gz [-m module] [-k file.ko] [-f /path] ... <TEST
#     -m  a module of the Debian kernel, by name
#     -k  an out-of-tree module (installed under extra/), with the Debian
#         modules it needs; it may need another -k module
#     -f  a file of $E2E_USERLAND, by its path inside that root; with its
#         shared libraries when it is an ELF file (programs, plugins)
#     -d  a directory of $E2E_USERLAND, all of it, each ELF file in it
#         with its shared libraries (an interpreter's library, say)
#     -b  a statically linked program built here, installed in /usr/bin
#     -a  SRC=DST: a file built here (a provider), installed at DST, with
#         its shared libraries when it is an ELF file
#     -l  TARGET=LINK: a symbolic link
# TEST, on standard input, is the guest's test: busybox sh run by /init
# after guest-lib.sh has set the guest up (e2e_setup).
#
# It is rebuilt on every call: it takes about a second and can never be
# stale.  Needs e2e_kernel_prep (and e2e_userland_prep for -f) first.

E2E_MULTIARCH=x86_64-linux-gnu

# Copies host file SRC to DST inside the staging root, following symlinks
# so a library lands under the name the loader asks for.
e2e_stage_file() {
    mkdir -p "$(dirname "$1/$3")"
    cp -L "$2" "$1/$3"
}

# e2e_stage_module STAGE PATH: module PATH of E2E_KROOT into STAGE.
# 6.12's modules are xz-compressed: they are staged decompressed, so that
# busybox's modprobe needs no decompressor in the guest.
e2e_stage_module() {
    case $2 in
    *.ko.xz)
        mkdir -p "$(dirname "$1/$2")"
        xz -dc "$E2E_KROOT/$2" >"$1/${2%.xz}" ;;
    *) e2e_stage_file "$1" "$E2E_KROOT/$2" "$2" ;;
    esac
}

# The .ko paths (inside E2E_KROOT) that loading NAME needs, in load order.
e2e_module_closure() {
    modprobe -d "$E2E_KROOT" -S "$E2E_KVER" --show-depends "$1" |
        sed -n "s|^insmod $E2E_KROOT/\\([^ ]*\\).*|\\1|p"
}

# Shared libraries of FILE: looked up in the Debian root first, the host
# (same release) for the rest.  ldd never names libgcc_s, which
# pthread_exit() dlopens, so it is added by hand.  librados (which fio
# links) finds libceph-common in a folder of its own by its RUNPATH, a
# path of the guest's that ldd would look up on the host.
e2e_stage_libs() {
    local stage=$1 file=$2 u=$E2E_USERLAND lib
    local path=$u/lib/$E2E_MULTIARCH:$u/usr/lib/$E2E_MULTIARCH
    path=$path:$u/usr/lib/$E2E_MULTIARCH/ceph
    local out
    out=$(LD_LIBRARY_PATH=$path ldd "$file") || e2e_die "ldd $file failed"
    # librnic is built here, and staged by e2e_rnic_verbs_initramfs.
    out=$(grep -v '^[[:space:]]*librnic\.so\.1 ' <<<"$out")
    grep -q 'not found' <<<"$out" && e2e_die "$file: $(grep 'not found' <<<"$out")"
    for lib in $(awk '/=>/ { print $3; next } /^\t\// { print $1 }' <<<"$out") \
               "$u/lib/$E2E_MULTIARCH/libgcc_s.so.1"; do
        [ -e "$lib" ] || continue
        e2e_stage_file "$stage" "$lib" "${lib#"$u"}"
    done
}

e2e_initramfs() {
    local out=$1; shift
    local stage=$out.d mods=() kos=() opt arg f name OPTIND=1
    local moddir=lib/modules/$E2E_KVER
    rm -rf "$stage"
    mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,root,lib/e2e}
    cp /bin/busybox "$stage/bin/busybox"
    for f in $(/bin/busybox --list-full); do
        [ "$f" = bin/busybox ] || ln -sf /bin/busybox "$stage/$f"
    done
    cp "$E2E_LIB/guest-lib.sh" "$stage/lib/e2e/guest-lib.sh"
    cat >"$stage/lib/e2e/test.sh"
    printf '%s\n' '#!/bin/sh' '. /lib/e2e/guest-lib.sh' e2e_setup \
        '. /lib/e2e/test.sh' >"$stage/init"
    chmod 0755 "$stage/init"

    while getopts m:k:f:b:a:d:l: opt; do
        arg=$OPTARG
        case $opt in
        m) mods+=("$arg") ;;
        k) kos+=("$arg")
           # An out-of-tree module's own dependencies come from its modinfo.
           for name in $(modinfo -F depends "$arg" | tr ',' ' '); do
               mods+=("$name")
           done ;;
        b) e2e_stage_file "$stage" "$arg" "usr/bin/$(basename "$arg")" ;;
        a) e2e_stage_file "$stage" "${arg%%=*}" "${arg#*=}"
           [ "$(head -c 4 "${arg%%=*}" | tail -c 3)" != ELF ] ||
               e2e_stage_libs "$stage" "${arg%%=*}" ;;
        f) e2e_stage_file "$stage" "$E2E_USERLAND$arg" "$arg"
           [ "$(head -c 4 "$E2E_USERLAND$arg" | tail -c 3)" != ELF ] ||
               e2e_stage_libs "$stage" "$E2E_USERLAND$arg" ;;
        l) mkdir -p "$stage$(dirname "${arg#*=}")"
           ln -sf "${arg%%=*}" "$stage${arg#*=}" ;;
        d) mkdir -p "$stage$(dirname "$arg")"
           cp -rL "$E2E_USERLAND$arg" "$stage$(dirname "$arg")/"
           while IFS= read -r f; do
               [ "$(head -c 4 "$f" | tail -c 3)" != ELF ] ||
                   e2e_stage_libs "$stage" "$f"
           done < <(find "$E2E_USERLAND$arg" -name '*.so*' -type f) ;;
        *) e2e_die "e2e_initramfs: bad option" ;;
        esac
    done

    # Modules: the closure of each, then depmod so the guest's modprobe
    # resolves the same dependencies by name.
    mkdir -p "$stage/$moddir/extra"
    cp "$E2E_KROOT/$moddir"/modules.{order,builtin,builtin.modinfo} "$stage/$moddir/"
    for name in ${mods[@]+"${mods[@]}"}; do
        # Another -k module (a test module's rnic) is no Debian one.
        for f in ${kos[@]+"${kos[@]}"}; do
            [ "$(basename "$f" .ko)" != "$name" ] || continue 2
        done
        # Empty for a module built into the kernel.
        f=$(e2e_module_closure "$name") ||
            e2e_die "no module $name in $E2E_KVER"
        for f in $f; do
            e2e_stage_module "$stage" "$f"
        done
    done
    for f in ${kos[@]+"${kos[@]}"}; do
        cp "$f" "$stage/$moddir/extra/"
    done
    depmod -b "$stage" "$E2E_KVER"

    (cd "$stage" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) |
        gzip -1 >"$out"
}
