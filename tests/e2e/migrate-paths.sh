#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The migration scenarios' sockets from a clone at any depth: through a
# folder whose path is longer than a UNIX socket's 107 bytes, as a user's
# clone may be, a shell sources lib/e2e.sh, makes the migration folder
# (e2e_migrate_init) and starts a source and a destination QEMU with
# their sockets (e2e_migrate_ctl): they must answer on QMP, and the
# destination take the "go" line on its control port.  The folder must be
# gone when that shell has ended.
# Boots no guest: a few seconds.
. "$(dirname "$0")/lib/e2e.sh"

deep=$(mktemp -d)
E2E_RUN_DIRS+=("$deep")
clone=$deep/$(printf 'a-user-keeps-clones-deep-%.0s' 1 2 3 4 5)/rnic
mkdir -p "$clone"
ln -s "$E2E_TOP"/* "$clone"/
echo "e2e: a clone at $clone (${#clone} characters)"

rc=0
run=$(bash -euo pipefail -c '
. "$1/tests/e2e/lib/e2e.sh"
e2e_migrate_init migrate-paths
echo "$run"
for side in src dst; do
    # shellcheck disable=SC2046
    timeout 60 "$E2E_QEMU" -M q35 -accel tcg -S -nodefaults -display none \
        $(e2e_migrate_ctl $side) >&2 &
    E2E_GUEST_PID[$side]=$!     # e2e_guest_cleanup stops it if a step fails
done
e2e_migrate_qmp src query-status >&2
e2e_migrate_go
for side in src dst; do
    e2e_migrate_qmp $side quit >/dev/null
    wait "${E2E_GUEST_PID[$side]}"
done
' migrate-paths "$clone") || rc=1
if [ -z "$run" ] || [ -e "$run" ]; then
    echo "e2e: the migration folder '$run' was not made or is still there" >&2
    rc=1
fi
e2e_result migrate-paths "$rc"
