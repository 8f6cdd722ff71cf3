#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `make check-capture`: runs the qtests that move data (CAPTURE_QTESTS in
# the Makefile: two devices, the test playing the peer, connection setup,
# bounds under load, RFC 6581 RTR) with every device recording its traffic
# (RNIC_QTEST_CAPTURE), through meson as check-qtest runs the others, then
# has tshark decode each capture and compares it with the device's
# statistics (check_capture.py --dir).  Ends with
# "capture: N passed, N failed": the captures, and each qtest that failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
qemu_build=${QEMU_BUILD:-$top/build/qemu}
out=$top/build/captures/qtest
tests=${CAPTURE_QTESTS:?set by make check-capture}

if ! command -v tshark > /dev/null; then
    echo "check-capture: tshark is missing; run ./configure --install-deps"
    echo "capture: 0 passed, 1 failed"
    exit 1
fi
rm -rf "$out"
mkdir -p "$out"
# shellcheck disable=SC2086
(cd "$qemu_build" && RNIC_QTEST_CAPTURE=$out /usr/bin/meson test --no-rebuild \
    --print-errorlogs --timeout-multiplier 3 \
    $(printf 'qtest-x86_64/%s ' $tests)) | tee "$out/qtests.log"
rc=${PIPESTATUS[0]}
failed=$(awk '/^(Fail|Timeout):/ { n += $2 } END { print n + 0 }' "$out/qtests.log")
[ "$rc" = 0 ] || [ "$failed" -gt 0 ] || failed=1

python3 "$top/tests/capture/check_capture.py" --dir "$out" | tee "$out/captures.log"
passed=$(grep -c '^PASS ' "$out/captures.log")
failed=$((failed + $(grep -c '^FAIL ' "$out/captures.log")))
[ "$passed" -gt 0 ] || { echo "check-capture: no capture was written"; failed=$((failed + 1)); }
echo "capture: $passed passed, $failed failed"
[ "$failed" = 0 ]
