# SPDX-License-Identifier: GPL-2.0-or-later
#
# Shared by every e2e script (sourced, not run): where things live, how to
# say what went wrong, and the two apt primitives the other parts build on.
# Everything downloaded or built is cached under build/e2e/ so that a second
# run only does what is missing.

E2E_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_TOP=$(cd "$E2E_LIB/../../.." && pwd)
E2E_OUT=${E2E_OUT:-$E2E_TOP/build/e2e}
E2E_QEMU=${E2E_QEMU:-$E2E_TOP/build/qemu-system-x86_64}
mkdir -p "$E2E_OUT"

e2e_log() { echo "e2e: $*" >&2; }
e2e_die() { echo "e2e: error: $*" >&2; exit 1; }

# True when FILE was written after apt last changed its package lists:
# what apt answered then still holds, and asking again (over a second per
# apt call here) can be skipped.
e2e_fresh() {
    [ -f "$1" ] && [ "$1" -nt /var/lib/apt/lists ]
}

# The kernel lines the guests run, the first the default: Debian 12's
# own (linux-image-amd64) and its LTS update line (linux-image-6.12-amd64).
# E2E_KERNEL picks the one a scenario boots.
E2E_KERNEL_LINES=(6.1 6.12)
E2E_KERNEL=${E2E_KERNEL:-${E2E_KERNEL_LINES[0]}}

e2e_kernel_meta() {
    if [ "$E2E_KERNEL" = "${E2E_KERNEL_LINES[0]}" ]; then
        echo linux-image-amd64
    else
        echo "linux-image-$E2E_KERNEL-amd64"
    fi
}

# The version of that line the guests boot: whatever its meta-package
# points to today (security updates move the number, so it is never
# written down).
e2e_kver() {
    local cache=$E2E_OUT/kver-$E2E_KERNEL meta
    if [ -z "${E2E_KVER:-}" ]; then
        if e2e_fresh "$cache"; then
            E2E_KVER=$(cat "$cache")
        else
            meta=$(e2e_kernel_meta)
            E2E_KVER=$(apt-cache depends "$meta" |
                       sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1)
            [ -n "$E2E_KVER" ] ||
                e2e_die "apt-cache knows no $meta; run apt-get update"
            echo "$E2E_KVER" >"$cache"
        fi
        # A pinned suite could point the meta-package at another line.
        case $E2E_KVER in
        "$E2E_KERNEL".*) ;;
        *) e2e_die "E2E_KERNEL=$E2E_KERNEL, but its package is $E2E_KVER" ;;
        esac
    fi
    echo "$E2E_KVER"
}

# Host tools: installed only when missing, waiting for other apt users.
e2e_apt_need() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f '${Status}' "$p" 2>/dev/null |
            grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    e2e_log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=600 install -y "${missing[@]}" >&2
}

# Guest pieces: .debs fetched into the cache (never installed on the host)
# and unpacked into ROOT.  The stamp holds the request and the exact files
# unpacked; apt is asked once for all of them, and not at all while its
# lists have not changed since.
e2e_debs_extract() {
    local root=$1; shift
    local debs=$E2E_OUT/debs stamp=$root/.e2e-debs files missing=() f p
    if e2e_fresh "$stamp" && [ "$(head -n1 "$stamp")" = "$*" ]; then
        return 0
    fi
    mkdir -p "$debs"
    # apt drops root for downloads; let its _apt user write here.
    chmod 0777 "$debs"
    files=$(apt-get download --print-uris "$@" | awk '{ print $2 }') ||
        e2e_die "apt cannot download $*"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(printf '%s\n%s' "$*" "$files")" ]; then
        touch "$stamp"
        return 0
    fi
    for p in "$@"; do
        f=$(grep "^${p}_" <<<"$files") || e2e_die "apt knows no package $p"
        [ -f "$debs/$f" ] || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        (cd "$debs" && apt-get download "${missing[@]}" >&2) ||
            e2e_die "apt-get download ${missing[*]} failed"
    fi
    rm -rf "$root"
    mkdir -p "$root"
    for f in $files; do dpkg -x "$debs/$f" "$root"; done
    printf '%s\n%s\n' "$*" "$files" >"$stamp"
}
