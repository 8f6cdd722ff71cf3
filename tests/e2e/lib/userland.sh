# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-core and iproute2 for the guests (sourced), taken from Debian's
# .debs rather than from the host: the guest then runs exactly what a
# Debian user would, whatever the host has installed.  Library packages are
# followed through their Depends so that ldd can resolve inside this root
# first.  Sets E2E_USERLAND.

E2E_GUEST_PKGS=(rdmacm-utils ibverbs-providers libibverbs1 librdmacm1 iproute2
                ibverbs-utils perftest nvme-cli nfs-kernel-server nfs-common
                netbase qperf python3-pyverbs python3.11-minimal fio)

# The named packages plus every lib* package they need, recursively; the
# non-library dependencies (debconf, adduser, ...) matter only to dpkg.
# One apt-cache call per level of the tree: each call costs over a second.
e2e_userland_closure() {
    local -A seen=()
    local level=("$@") next p
    while [ ${#level[@]} -gt 0 ]; do
        next=()
        for p in "${level[@]}"; do seen[$p]=1; echo "$p"; done
        for p in $(apt-cache depends --no-recommends --no-suggests \
                       --no-conflicts --no-breaks --no-replaces \
                       --no-enhances "${level[@]}" |
                   sed -n 's/^ *|\{0,1\}Depends: \(lib[^< ]*\)$/\1/p' |
                   sort -u); do
            [ -n "${seen[$p]:-}" ] || next+=("$p")
        done
        level=("${next[@]}")
    done
}

e2e_userland_prep() {
    local cache=$E2E_OUT/userland.closure pkgs
    E2E_USERLAND=$E2E_OUT/userland
    if ! e2e_fresh "$cache" ||
       [ "$(head -n1 "$cache")" != "${E2E_GUEST_PKGS[*]}" ]; then
        { echo "${E2E_GUEST_PKGS[*]}"
          e2e_userland_closure "${E2E_GUEST_PKGS[@]}"; } >"$cache.tmp"
        mv "$cache.tmp" "$cache"
    fi
    mapfile -t pkgs < <(tail -n +2 "$cache")
    e2e_debs_extract "$E2E_USERLAND" "${pkgs[@]}"
}
