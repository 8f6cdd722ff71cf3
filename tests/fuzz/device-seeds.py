#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Seeds for `make fuzz-device` (QEMU's generic-fuzz on -device rnic): each
# brings the device up as a driver does — rings programmed, ENABLE — and
# then rings one doorbell while the fuzzer's DMA pattern stands in for the
# descriptors the device fetches.  Without them the fuzzer would first
# have to find the bring-up sequence on its own.  Register offsets and
# opcodes come from include/rnic/rnic-abi.h, so they never drift.
#
# Input format (tests/qtest/fuzz/generic_fuzz.c in QEMU): commands split
# by "FUZZ"; the first byte of each is the operation modulo 10.
# Usage: device-seeds.py ABI_HEADER OUTPUT_DIR
import re
import struct
import sys
from pathlib import Path

OP_WRITE, OP_ADD_DMA_PATTERN, OP_CLOCK_STEP = 3, 7, 9
LONG = 2            # generic-fuzz's access sizes: Byte, Word, Long, Quad
SEP = b"FUZZ"
CMDQ, EQ = 0x100000, 0x200000   # guest RAM, 4 KiB aligned


def abi_constants(header):
    text = Path(header).read_text()
    regs = {m[0]: int(m[1], 16) for m in
            re.findall(r"#define (RNIC_REG_\w+)\s+(0x[0-9a-f]+)", text)}
    # Opcodes are written 0xNN, statuses 0xNNNN.
    cmds = {m[0]: int(m[1], 16) for m in
            re.findall(r"(RNIC_CMD_[A-Z_]+)\s*=\s*(0x[0-9a-f]{2}),", text)}
    return regs, cmds


def write(reg, value):
    # struct { u8 size; u8 base; u32 offset; u64 value; } with its padding;
    # base 0 is the first fuzzable region, BAR 0 (lowest address).
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", LONG, 0, reg, value)


def dma_pattern(data, index=4, stride=1):
    return bytes([OP_ADD_DMA_PATTERN, index, stride]) + data


def bring_up(r):
    return [write(r["RNIC_REG_CMDQ_BASE_LO"], CMDQ),
            write(r["RNIC_REG_CMDQ_BASE_HI"], 0),
            write(r["RNIC_REG_CMDQ_LOG_SIZE"], 4),
            write(r["RNIC_REG_EQ_BASE_LO"], EQ),
            write(r["RNIC_REG_EQ_BASE_HI"], 0),
            write(r["RNIC_REG_EQ_LOG_SIZE"], 3),
            write(r["RNIC_REG_CONTROL"], 1)]


def command(opcode, payload_words):
    # opcode, flags (IRQ), status, cookie, then payload words.
    body = struct.pack("<BBHI", opcode, 1, 0, 0)
    body += b"".join(struct.pack("<I", w) for w in payload_words)
    return body.ljust(64, b"\0")


def wqe_opcodes(text):
    return {m[0]: int(m[1], 16) for m in
            re.findall(r"(RNIC_WQE_[A-Z_]+)\s*=\s*(0x[0-9a-f]{2}),", text)}


def sq_wqe(opcode, imm_or_stag=0, remote_stag=0, tail=b""):
    # struct rnic_sq_wqe: 64-byte head, then the SGE area (FAST_REG's
    # struct rnic_wqe_fast_reg lives there).
    head = struct.pack("<QBBBBIIIQQQ16x", 1, opcode, 1, 0, 0, imm_or_stag,
                       remote_stag, 0, 0x1000, 0, 0)
    return (head + tail).ljust(128, b"\0")


def kernel_qp_setup(r, cmds):
    # PD 1, CQ 1, a kernel QP (CREATE_QP flag KERNEL) and an ALLOC_MR
    # region of 4 pages: what FAST_REG and READ_INV need to get anywhere.
    # Each command slot the device reads takes the next DMA pattern.
    setup = [command(cmds["RNIC_CMD_CREATE_PD"], []),
             # Word 0 of each payload is the handle (out, here).
             command(cmds["RNIC_CMD_CREATE_CQ"], [0, 4 | 1 << 8, 0x300000, 0]),
             command(cmds["RNIC_CMD_CREATE_QP"],
                     [0, 1, 1, 1, 0xffffffff, 3 | 3 << 8 | 1 << 16,
                      0x400000, 0, 0x500000, 0]),
             command(cmds["RNIC_CMD_ALLOC_MR"], [0, 1, 4, 0x10])]
    return (bring_up(r) + [dma_pattern(c) for c in setup] +
            [write(r["RNIC_REG_CMDQ_PROD"], len(setup)),
             bytes([OP_CLOCK_STEP])])


def wr_seeds(r, cmds, wqe):
    # The work requests of a kernel QP: FAST_REG (page list at
    # 0x600000), Read with Invalidate, LOCAL_INV of the region.  They
    # reach the work-queue fetch and parse (checked with -print_coverage);
    # they run only once the QP is in RTS, which needs a connection this
    # fuzzer does not make: fuzz_rx runs FAST_REG (tests/fuzz/rxside.c).
    stag = 0x111            # index 1, the key FAST_REG gives it
    fr = struct.pack("<QQQIIIIB3x", 0x600000, 0x7000000, 4 * 4096, 4,
                     0x0b, stag, 0, 12)
    wrs = {"wr_fast_reg": sq_wqe(wqe["RNIC_WQE_FAST_REG"], tail=fr),
           "wr_read_inv": sq_wqe(wqe["RNIC_WQE_READ_INV"], stag, 0x101,
                                 struct.pack("<QII", 0x7000000, 4096, stag)),
           "wr_local_inv": sq_wqe(wqe["RNIC_WQE_LOCAL_INV"], stag)}
    pages = b"".join(struct.pack("<Q", 0x700000 + 4096 * i)
                     for i in range(4))
    return {name: kernel_qp_setup(r, cmds) +
            [dma_pattern(w), dma_pattern(pages),
             write(r["RNIC_REG_DB_SQ"], 0x00010001),
             bytes([OP_CLOCK_STEP])]
            for name, w in wrs.items()}


def main(header, out):
    r, cmds = abi_constants(header)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = {"enable": bring_up(r)}
    for name, op in cmds.items():
        # Small ids and lengths: the first PD, CQ or QP is 1.
        cmd = command(op, [1, 0, 0x1000, 0, 4096, 0, 1, 12, 3, 3, 1, 1])
        seeds[name.lower()] = (bring_up(r) + [dma_pattern(cmd)] +
                               [write(r["RNIC_REG_CMDQ_PROD"], 4),
                                bytes([OP_CLOCK_STEP])])
    for db in ("DB_SQ", "DB_RQ", "DB_SRQ", "DB_CQ", "DB_CQ_ARM"):
        seeds[db.lower()] = (bring_up(r) +
                             [dma_pattern(bytes(range(64)), 0, 1),
                              write(r["RNIC_REG_" + db], 0x00030001),
                              bytes([OP_CLOCK_STEP])])
    seeds.update(wr_seeds(r, cmds, wqe_opcodes(Path(header).read_text())))
    for name, ops in seeds.items():
        (out / name).write_bytes(SEP.join(ops))


if __name__ == "__main__":
    main(*sys.argv[1:])
