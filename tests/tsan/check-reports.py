#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ThreadSanitizer reports of a make check-tsan run, sorted by who races.

Each report has two accesses; an access belongs to the first frame that is
not a copy routine (memcpy and friends).  A report is the device's when
one of its two accesses is in rnic's code (hw/rnic, the core).  Of those,
only one kind is expected:
  guest-ram  the device's DMA (rnic_dma_copy through its RAM cache, or
             rnic_ram_copy_mapped on an IOThread past it, as behind an
             IOMMU) and a vCPU's or qtest's access to the same guest
             memory: unordered as with any DMA engine; the guest orders
             them with doorbells and completions.
Every other device report fails the run.  Reports with no rnic access are
QEMU's own (its lock-free bottom-half list and QOM reference counts use
fences and plain reads that TSan does not model); they are counted and
listed, not failed.

Usage: check-reports.py LOGDIR  (TSan's log_path files)
"""
import collections
import glob
import re
import sys

COPY = re.compile(r'^(memcpy|memmove|memset|__tsan_\w+|__interceptor_\w+)$')
OURS = re.compile(r'/hw/rnic/|rnic-core')
GUEST_RAM = {'rnic_dma_copy', 'rnic_ram_copy_mapped'}


def accesses(block):
    """(function, file) of the racing frame of each access."""
    out = []
    for part in re.split(r'\n(?=  (?:Previous )?(?:[Aa]tomic )?(?:[Rr]ead|[Ww]rite) of)', block):
        frames = re.findall(r'#\d+ (\S+) (\S+)', part)
        for fn, where in frames:
            if not COPY.match(fn):
                out.append((fn, where))
                break
    return out[:2]


def main():
    ours, qemu = collections.Counter(), collections.Counter()
    allowed = collections.Counter()
    for path in glob.glob(sys.argv[1] + '/*'):
        text = open(path, errors='replace').read()
        for block in text.split('==================')[1:]:
            m = re.search(r'WARNING: ThreadSanitizer: (.+?) \(pid', block)
            if not m:
                continue
            acc = accesses(block)
            names = ' vs '.join(fn for fn, _ in acc)
            key = m.group(1) + ': ' + names
            if not any(OURS.search(w) for _, w in acc):
                qemu[key] += 1
            elif any(fn in GUEST_RAM for fn, _ in acc):
                allowed['guest-ram: ' + names] += 1
            else:
                ours[key] += 1
    for title, c in (('QEMU\'s own', qemu), ('expected', allowed),
                     ('DEVICE', ours)):
        for key, n in c.most_common():
            print(f'tsan: {title}: {n} x {key}')
    print(f'tsan: {sum(ours.values())} device reports '
          f'({len(ours)} distinct), {sum(allowed.values())} expected, '
          f'{sum(qemu.values())} QEMU\'s own')
    return 1 if ours else 0


if __name__ == '__main__':
    sys.exit(main())
