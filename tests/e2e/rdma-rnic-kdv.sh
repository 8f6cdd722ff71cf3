#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic's own verbs from a kernel consumer (guest-driver/linux/rnic_ib_dv.h):
# tests/e2e/kdv/rnic_kdv_test.ko, built against the guest kernel's headers
# and rnic.ko's Module.symvers, connects one guest's rnic0 to itself
# through rdma_cm and checks rnic_ib_qp_set_rtr, rnic_ib_qp_query_conn and
# rnic_ib_post_recv_linked (the checks: the module's top comment).  It
# prints "KDV PASS name" or "KDV FAIL name: why" for each, then "KDV DONE
# passed=N failed=M"; the scenario passes only with all KDV_CHECKS passed
# and none failed, and both modules unloaded with a clean kernel log.
# E2E_KDV_ARGS: more module parameters, comma-separated (timeout_ms=N).
. "$(dirname "$0")/lib/e2e.sh"

name=rdma-rnic-kdv
# The module's KDV_CHECKS: a module that skipped one does not pass.
checks=$(sed -n 's/^#define KDV_CHECKS[[:space:]]*//p' \
    "$(dirname "$0")/kdv/rnic_kdv_test.c")
[ -n "$checks" ] || e2e_die "no KDV_CHECKS in kdv/rnic_kdv_test.c"
e2e_prep

# Built in a copy of its own (kbuild writes beside the sources); the
# headers it includes are the repository's (RNIC_TOP).
kdv_build() {
    local out=$E2E_OUT/kdv/$E2E_KVER f
    mkdir -p "$out"
    for f in rnic_kdv_test.c Kbuild; do
        cmp -s "$E2E_TOP/tests/e2e/kdv/$f" "$out/$f" ||
            cp "$E2E_TOP/tests/e2e/kdv/$f" "$out/$f"
    done
    if ! make -C "$E2E_KDIR" M="$out" RNIC_TOP="$E2E_TOP" \
        KBUILD_EXTRA_SYMBOLS="$(dirname "$E2E_RNIC_KO")/Module.symvers" \
        modules >"$out.log" 2>&1 || grep -qi warning "$out.log"; then
        cat "$out.log" >&2
        e2e_die "rnic_kdv_test.ko did not build cleanly against $E2E_KDIR"
    fi
    KDV_KO=$out/rnic_kdv_test.ko
}
kdv_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_initramfs "$initrd" -k "$E2E_RNIC_KO" -k "$KDV_KO" -m rdma_ucm \
    -m ib_uverbs -f /usr/bin/rdma <<'GUEST'
me=$(e2e_arg ip)
want=$(e2e_arg checks)
e2e_rnic_up "$me" || exit
# shellcheck disable=SC2046
e2e_check kdv-load modprobe rnic_kdv_test addr="$me" port="$(e2e_arg port)" \
    $(e2e_arg kdvargs | tr , ' ')
dmesg | grep 'kdv: '
dmesg | sed -n 's/^\[[^]]*\] \(KDV .*\)$/\1/p' >/tmp/kdv.out
while IFS= read -r line; do
    echo "$line"
    case $line in
    "KDV PASS "*) e2e_pass "kdv ${line#KDV PASS }" ;;
    "KDV FAIL "*) line=${line#KDV FAIL }
                  e2e_fail "kdv ${line%%:*}" "${line#*: }" ;;
    esac
done </tmp/kdv.out
if grep -qx "KDV DONE passed=$want failed=0" /tmp/kdv.out; then
    e2e_pass "kdv-done $want checks"
else
    e2e_fail kdv-done "want KDV DONE passed=$want failed=0"
fi
lsmod | grep -q '^rnic_kdv_test ' && e2e_check kdv-unload rmmod rnic_kdv_test
e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
rc=0
# shellcheck disable=SC2086
e2e_guest_run "$name" "$initrd" \
    "e2e.ip=$net.1 e2e.port=$port e2e.checks=$checks e2e.kdvargs=${E2E_KDV_ARGS:-}" \
    $rnic_io -device "$dev" || rc=1
tr -d '\r' <"$E2E_LOGS/$name.log" | grep -qx "KDV DONE passed=$checks failed=0" ||
    { e2e_log "$name: no 'KDV DONE passed=$checks failed=0' (log: $E2E_LOGS/$name.log)"; rc=1; }
e2e_result "$name" "$rc"
