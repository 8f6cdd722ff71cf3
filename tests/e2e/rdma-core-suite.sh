#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-core's own test suite (pyverbs, from Debian's python3-pyverbs) as a
# provider maintainer runs it, on one device: in an rnic guest
# (`--dev rnic0`) and, side by side, in a siw guest (`--dev siw0`, on
# virtio-net).  rdma_cm's tests connect the device to itself.  With the
# suite runs tests/e2e/suite/test_iwarp.py: what the suite checks over QPs
# it connects by modify_qp (impossible on iWARP), over QPs rdma_cm
# connects.  One table of both devices (tests/e2e/suite/suite-table.py);
# the scenario passes when rnic passes every test siw passes and no test
# fails or errors on rnic but those tests/e2e/suite/rnic-allowed.txt
# names, each with its reason.
# E2E_SUITE_TIMEOUT: seconds for each guest (default 1500).
. "$(dirname "$0")/lib/e2e.sh"

name=rdma-core-suite
suite_dir=$E2E_TOP/tests/e2e/suite
E2E_TIMEOUT=${E2E_SUITE_TIMEOUT:-1500}
e2e_prep
e2e_librnic_build

# The suite, Python and iproute2's ip (the suite calls `ip -j`).
suite_files=(-f /usr/bin/python3.11 -d /usr/lib/python3.11
    -d /usr/lib/python3/dist-packages/pyverbs
    -d /usr/share/doc/rdma-core/tests
    -a "$E2E_USERLAND/bin/ip=/usr/bin/ip"
    -a "$suite_dir/run-suite.py=/usr/lib/e2e/run-suite.py"
    -a "$suite_dir/test_iwarp.py=/usr/lib/e2e/test_iwarp.py")

# The guest's part, for DEV: the suite's files made importable (Debian
# gzips some), /dev/shm, and the run, every result on the console.
guest_suite() {
    cat <<GUEST
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
cp -r /usr/share/doc/rdma-core/tests /tmp/suite && gunzip /tmp/suite/*.gz
cp /usr/lib/e2e/test_iwarp.py /tmp/suite/
python3.11 /usr/lib/e2e/run-suite.py /tmp/suite --dev $1 --port 1 --gid 0 \\
    2>&1 | tee /tmp/suite.out
e2e_check suite-ran grep -qx SUITE-END /tmp/suite.out
GUEST
}

net=10.$((RANDOM % 200 + 50)).$((RANDOM % 250 + 1))
hosts=127${net#10}
rnic_initrd=$E2E_OUT/$name-rnic.cpio.gz
{ echo "e2e_rnic_up $net.1 || exit"; guest_suite rnic0; } |
    e2e_rnic_verbs_initramfs "$rnic_initrd" "${suite_files[@]}"
siw_initrd=$E2E_OUT/$name-siw.cpio.gz
{ echo "e2e_siw_up $net.2 || exit"; guest_suite siw0; } |
    e2e_siw_initramfs "$siw_initrd" "${suite_files[@]}"

# rdma_cm's tests listen on 7471 and connect to it: that port alone.
e2e_guest_start "$name-rnic" "$rnic_initrd" "" \
    -m 1024 -device "rnic,listen-allow=$hosts.1:7471,peer-allow=$hosts.1:7471"
e2e_guest_start "$name-siw" "$siw_initrd" "" -m 1024 \
    -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0,romfile=
rc=0
e2e_guest_wait "$name-rnic" || rc=1
e2e_guest_wait "$name-siw" || rc=1
python3 "$suite_dir/suite-table.py" "$E2E_LOGS/$name-rnic.log" \
    "$E2E_LOGS/$name-siw.log" "$suite_dir/rnic-allowed.txt" || rc=1
e2e_result "$name" "$rc"
