#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check-spec: docs/spec.md against include/rnic/rnic-abi.h (every
# table of offsets and values, via the compiler: abi-layout.c and
# check-spec.py), then against the device (bring-up.py, a driver written
# from the spec's tables alone, over QEMU's qtest protocol).
# Usage: run.sh QEMU_BINARY OUT_DIR; ends with "spec: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
qemu=$1
out=$2
passed=0
failed=0

result() {      # result NAME STATUS
    if [ "$2" = 0 ]; then
        passed=$((passed + 1)); echo "spec: PASS $1"
    else
        failed=$((failed + 1)); echo "spec: FAIL $1"
    fi
}

mkdir -p "$out"
if ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -I"$top/include" \
        "$here/abi-layout.c" -o "$out/abi-layout" &&
   "$out/abi-layout" > "$out/abi-layout.txt"; then
    python3 "$here/check-spec.py" "$top/docs/spec.md" \
        "$top/include/rnic/rnic-abi.h" < "$out/abi-layout.txt"
    result "spec.md agrees with rnic-abi.h" $?
else
    result "rnic-abi.h: every byte a named field" 1
fi
python3 "$here/bring-up.py" --qemu "$qemu" --spec "$top/docs/spec.md"
result "a driver written from spec.md drives the device" $?
echo "spec: $passed passed, $failed failed"
[ "$failed" = 0 ]
