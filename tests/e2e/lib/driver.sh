# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic.ko built outside the source folder (sourced).  Kbuild writes an
# external module's objects beside its sources, and neither 6.1's nor
# 6.12's kbuild can send them elsewhere (MO= came with 6.13), so each
# build has a copy of the sources of its own, in the repository's layout:
# Kbuild and the driver find include/ and guest-driver/*.h by relative
# paths.  Builds for different kernels, and make check-driver's and the
# e2e guests', then never share an object.
#
#   e2e_driver_build KDIR OUT   brings OUT's copy up to date and runs
#                               kbuild there against the headers in KDIR;
#                               kbuild's output on stdout
#   e2e_driver_ko OUT           the rnic.ko that build makes
#   e2e_driver_fresh OUT KDIR   true when OUT's copy holds the sources
#                               as they are and its rnic.ko is newer than
#                               that copy and than KDIR's .config

# The driver's sources, relative to the top folder (not the rnic.mod.c
# of an in-place build).
e2e_driver_files() {
    (cd "$E2E_TOP" && printf '%s\n' guest-driver/linux/*.[ch] \
        guest-driver/linux/Kbuild guest-driver/*.h include/rnic/*.h) |
        grep -v '\.mod\.c$'
}

# OUT's copy made equal to the sources: a file is copied only when it
# differs, so that kbuild rebuilds only what changed, and a source gone
# from the repository goes from the copy.
e2e_driver_sync() {
    local out=$1 f
    local -A want=()
    while IFS= read -r f; do
        want[$f]=1
        cmp -s "$E2E_TOP/$f" "$out/$f" && continue
        mkdir -p "$(dirname "$out/$f")"
        cp "$E2E_TOP/$f" "$out/$f"
    done < <(e2e_driver_files)
    for f in "$out"/guest-driver/linux/*.[ch] "$out"/guest-driver/*.h \
             "$out"/include/rnic/*.h; do
        [ -e "$f" ] || continue
        case $f in *.mod.c) continue ;; esac
        [ -n "${want[${f#"$out"/}]:-}" ] || rm -f "$f"
    done
}

e2e_driver_build() {
    local kdir=$1 out=$2
    e2e_driver_sync "$out"
    make -C "$kdir" M="$out/guest-driver/linux" modules
}

e2e_driver_ko() {
    echo "$1/guest-driver/linux/rnic.ko"
}

e2e_driver_fresh() {
    local out=$1 kdir=$2 ko f
    ko=$(e2e_driver_ko "$out")
    [ -f "$ko" ] && [ "$ko" -nt "$kdir/.config" ] || return 1
    while IFS= read -r f; do
        cmp -s "$E2E_TOP/$f" "$out/$f" && [ "$ko" -nt "$out/$f" ] || return 1
    done < <(e2e_driver_files)
}
