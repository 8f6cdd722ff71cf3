#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A bring-up driver for rnic written from docs/spec.md alone.

It reads the spec's tables (register offsets, opcodes, status codes and
every structure's field offsets and sizes) and nothing of the C headers,
then drives two rnic devices in one QEMU through QEMU's qtest protocol as
a driver in a guest would: PCI setup, rings, QUERY_DEVICE, PD, regions,
CQs, QPs, LISTEN/CONNECT/ACCEPT over the host's loopback, an RDMA Write,
a Send into a posted receive, an RDMA Read, each checked byte for byte in
guest memory, and teardown.  Without MSI-X: every queue is polled.  When
the spec and the device disagree, it fails.  It is also the example a
driver writer starts from (what QEMU's edu device is for QEMU).

Usage: bring-up.py --qemu QEMU_BINARY --spec docs/spec.md
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

from mdtables import tables     # tests/spec/mdtables.py: Markdown tables

TIMEOUT_S = 30


# ---- the spec's tables ------------------------------------------------------

class Spec:
    """Numbers and layouts, each from a table of docs/spec.md."""

    def __init__(self, path):
        self.layout = {}        # struct name -> {field: (offset, size)}
        self.value = {}         # table kind -> {NAME: value}
        for heading, rows in tables(open(path).read()):
            title = [c.lower() for c in rows[0]]
            m = re.search(r"`struct (rnic_\w+)`", heading)
            if m and title[:3] == ["offset", "size", "field"]:
                fields = {self._tick(r[2]).split("[")[0]:
                          (int(r[0]), int(r[1])) for r in rows[1:]}
                if len(fields) > len(self.layout.get(m.group(1), {})):
                    self.layout[m.group(1)] = fields
            elif len(title) > 1 and title[1] == "name":
                kind = self.value.setdefault(title[0], {})
                for r in rows[1:]:
                    kind[self._tick(r[1])] = int(self._tick(r[0]), 0)
                    if title[0] == "opcode" and len(r) > 2:
                        kind["struct " + self._tick(r[1])] = \
                            self._tick(r[2]).split()[1]

    @staticmethod
    def _tick(cell):
        m = re.search(r"`([^`]+)`", cell)
        return m.group(1) if m else cell

    def reg(self, name):
        return self.value["offset"][name]

    def pack(self, struct, **fields):
        """The bytes of `struct`, little-endian, unnamed fields 0."""
        lay = self.layout[struct]
        out = bytearray(max(o + s for o, s in lay.values()))
        for name, v in fields.items():
            off, size = lay[name]
            b = v if isinstance(v, bytes) else v.to_bytes(size, "little")
            out[off:off + len(b)] = b
        return bytes(out)

    def unpack(self, struct, data):
        return {name: int.from_bytes(data[o:o + s], "little") if s <= 8
                else data[o:o + s]
                for name, (o, s) in self.layout[struct].items()}


# ---- QEMU's qtest protocol --------------------------------------------------

class Qtest:
    """One QEMU with accel qtest; its memory and I/O ports by text commands."""

    def __init__(self, qemu, args):
        self.dir = tempfile.mkdtemp(prefix="rnic-spec-")
        path = os.path.join(self.dir, "qtest.sock")
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(path)
        srv.listen(1)
        self.proc = subprocess.Popen(
            [qemu, "-machine", "q35", "-accel", "qtest", "-nodefaults",
             "-display", "none", "-qtest", "unix:" + path,
             "-qtest-log", "/dev/null"] + args)
        srv.settimeout(TIMEOUT_S)
        self.sock, _ = srv.accept()
        srv.close()
        self.rx = self.sock.makefile("r")

    def cmd(self, line):
        self.sock.sendall((line + "\n").encode())
        while True:
            reply = self.rx.readline().split()
            if reply and reply[0] == "OK":
                return reply[1:]
            if not reply or reply[0] != "IRQ":
                raise RuntimeError(f"qtest: {line!r} -> {reply}")

    def read(self, addr, size):
        return bytes.fromhex(self.cmd(f"read {addr:#x} {size}")[0][2:])

    def write(self, addr, data):
        self.cmd(f"write {addr:#x} {len(data)} 0x{data.hex()}")

    def readl(self, addr):
        return int(self.cmd(f"readl {addr:#x}")[0], 16)

    def writel(self, addr, value):
        self.cmd(f"writel {addr:#x} {value:#x}")

    def settle(self):
        """Lets QEMU's main loop run the device's work and the sockets."""
        self.cmd("clock_step 100000")
        time.sleep(0.001)

    def close(self):
        self.proc.terminate()
        self.proc.wait(TIMEOUT_S)


def poll(what, ready):
    end = time.monotonic() + TIMEOUT_S
    while True:
        got = ready()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(what)


# ---- one device --------------------------------------------------------------

class Rnic:
    RAM = [0x1000000]       # guest RAM this driver hands out, 4 KiB aligned

    def __init__(self, q, spec, devfn, bar0):
        self.q, self.spec, self.bar0 = q, spec, bar0
        self.cfg_write(devfn, 0x10, bar0)           # BAR 0 (32-bit memory)
        self.cfg_write(devfn, 0x04, 0x6)            # memory space, bus master
        self.cmd_log = self.eq_log = 4
        self.cmdq = self.alloc(64 << self.cmd_log)
        self.eq = self.alloc(32 << self.eq_log)
        self.cmd_prod = self.eq_cons = 0

    def cfg_write(self, devfn, reg, value):
        self.q.cmd(f"outl 0xcf8 {0x80000000 | devfn << 8 | reg:#x}")
        self.q.cmd(f"outl 0xcfc {value:#x}")

    @classmethod
    def find(cls, q, vendor, device):
        found = []
        for devfn in range(0, 256, 8):
            q.cmd(f"outl 0xcf8 {0x80000000 | devfn << 8:#x}")
            if int(q.cmd("inl 0xcfc")[0], 16) == device << 16 | vendor:
                found.append(devfn)
        return found

    def alloc(self, size):
        """Zeroed guest memory: every ring starts zeroed (spec "Rings")."""
        addr = self.RAM[0]
        self.RAM[0] += (size + 0xfff) & ~0xfff
        self.q.write(addr, bytes(size))
        return addr

    def rd(self, name):
        return self.q.readl(self.bar0 + self.spec.reg(name))

    def wr(self, name, value):
        self.q.writel(self.bar0 + self.spec.reg(name), value)

    def enable(self):
        for ring, base, log in (("CMDQ", self.cmdq, self.cmd_log),
                                ("EQ", self.eq, self.eq_log)):
            self.wr(ring + "_BASE_LO", base & 0xffffffff)
            self.wr(ring + "_BASE_HI", base >> 32)
            self.wr(ring + "_LOG_SIZE", log)
        self.wr("CONTROL", 1)                       # ENABLE
        assert self.rd("STATUS") & 1, "STATUS.READY is clear"

    def command(self, name, expect="OK", **fields):
        """Runs one command; returns its payload's fields as written back."""
        s = self.spec
        struct = s.value["opcode"]["struct " + name]
        slot = self.cmdq + 64 * (self.cmd_prod % (1 << self.cmd_log))
        self.q.write(slot, s.pack("rnic_cmd", opcode=s.value["opcode"][name],
                                  status=s.value["code"]["PENDING"],
                                  cookie=self.cmd_prod,
                                  u=s.pack(struct, **fields)))
        self.cmd_prod += 1
        self.wr("CMDQ_PROD", self.cmd_prod)
        out = poll(name, lambda: self._done(slot))
        status = {v: k for k, v in s.value["code"].items()}[out["status"]]
        assert status == expect, f"{name}: {status}, expected {expect}"
        return s.unpack(struct, out["u"])

    def _done(self, slot):
        out = self.spec.unpack("rnic_cmd", self.q.read(slot, 64))
        if out["status"] != self.spec.value["code"]["PENDING"]:
            return out
        self.q.settle()
        return None

    def next_entry(self, ring, log, cons, struct):
        """The entry at `cons` once the device wrote it (its phase bit)."""
        entry_size = len(self.spec.pack(struct))
        addr = ring + entry_size * (cons % (1 << log))

        def ready():
            e = self.spec.unpack(struct, self.q.read(addr, entry_size))
            if e["phase"] & 1 == ((cons >> log) & 1) ^ 1:
                return e
            self.q.settle()
            return None
        return poll(struct, ready)

    def event(self, name):
        e = self.next_entry(self.eq, self.eq_log, self.eq_cons, "rnic_event")
        self.eq_cons += 1
        self.wr("EQ_CONS", self.eq_cons)
        types = {v: k for k, v in self.spec.value["type"].items()}
        assert types[e["type"]] == name, f"event {types[e['type']]}, " \
            f"expected {name}"
        return e


# ---- the objects a driver makes ----------------------------------------------

class Queue:
    """A CQ, or a QP's send or receive queue: a ring and a 16-bit index."""

    def __init__(self, dev, log, entry):
        self.dev, self.log, self.entry = dev, log, entry
        self.addr = dev.alloc(entry << log)
        self.index = 0


def create_cq(dev):
    cq = Queue(dev, 4, 32)
    cq.n = dev.command("CREATE_CQ", log_size=cq.log, msix_vector=1,
                       ring_addr=cq.addr)["cqn"]
    return cq


def poll_cq(cq, opcode):
    dev = cq.dev
    e = dev.next_entry(cq.addr, cq.log, cq.index, "rnic_cq_entry")
    cq.index += 1
    dev.wr("DB_CQ", cq.n | (cq.index & 0xffff) << 16)
    status = {v: k for k, v in dev.spec.value["cqe status"].items()}
    assert status[e["status"]] == "SUCCESS", f"{opcode}: {status[e['status']]}"
    assert e["opcode"] == dev.spec.value["wqe opcode"][opcode]
    return e


def create_qp(dev, pdn, cq):
    sq, rq = Queue(dev, 4, 128), Queue(dev, 4, 128)
    qpn = dev.command("CREATE_QP", pdn=pdn, send_cqn=cq.n, recv_cqn=cq.n,
                      srqn=0xffffffff, sq_log_size=sq.log,
                      rq_log_size=rq.log, sq_addr=sq.addr,
                      rq_addr=rq.addr)["qpn"]
    return qpn, sq, rq


def post(dev, qpn, queue, doorbell, struct, **fields):
    slot = queue.addr + 128 * (queue.index % (1 << queue.log))
    dev.q.write(slot, dev.spec.pack(struct, **fields))
    queue.index += 1
    dev.wr(doorbell, qpn | (queue.index & 0xffff) << 16)


def sge(spec, addr, length, stag):
    return spec.pack("rnic_wqe_sge", addr=addr, length=length, stag=stag)


def reg_mr(dev, pdn, size, access):
    """A region over fresh pages; its tagged offsets are 0x10000000 + n."""
    buf = dev.alloc(size)
    pbl = dev.alloc(8 * (size >> 12))
    dev.q.write(pbl, b"".join((buf + (i << 12)).to_bytes(8, "little")
                              for i in range(size >> 12)))
    stag = dev.command("REG_MR", pdn=pdn, access=access, npages=size >> 12,
                       iova=0x10000000, length=size, pbl_addr=pbl,
                       page_shift=12, key=0x5a)["stag"]
    return buf, stag


def connect(spec, a, b, qpa, qpb):
    lo = spec.pack("rnic_sockaddr", family=4, addr=bytes([127, 0, 0, 1]))
    lis = a.command("LISTEN", backlog=1, local=lo)
    port = spec.unpack("rnic_sockaddr", lis["local"])["port"]
    assert port, "LISTEN wrote no port into local.port"
    param = spec.pack("rnic_conn_param", ird=1, ord=1)
    peer = spec.pack("rnic_sockaddr", family=4, port=port,
                     addr=bytes([127, 0, 0, 1]))
    conn = b.command("CONNECT", qpn=qpb, peer=peer, param=param)["conn_id"]
    req = a.event("CONN_REQUEST")
    assert req["arg0"] == lis["listener_id"]
    a.command("ACCEPT", conn_id=req["id"], qpn=qpa, param=param)
    assert a.event("CONN_ESTABLISHED")["id"] == qpa
    est = b.event("CONN_ESTABLISHED")
    assert est["id"] == qpb and est["arg0"] == conn
    return lis["listener_id"]


def data_path(spec, a, b, qa, qb, mra, mrb):
    """Write, Send and Read from B to A, each checked in A's or B's memory."""
    (qpa, sqa, rqa, cqa), (qpb, sqb, rqb, cqb) = qa, qb
    (bufa, staga), (bufb, stagb) = mra, mrb
    sig = 1                                         # flags: SIGNALED
    data = bytes((i * 7 + 3) & 0xff for i in range(4096))
    b.q.write(bufb, data)
    post(b, qpb, sqb, "DB_SQ", "rnic_sq_wqe", wr_id=1, flags=sig,
         opcode=spec.value["wqe opcode"]["WRITE"], num_sge=1,
         remote_stag=staga, remote_addr=0x10000000,
         sge=sge(spec, 0x10000000, 4096, stagb))
    poll_cq(cqb, "WRITE")
    assert a.q.read(bufa, 4096) == data, "RDMA Write: A's memory differs"

    post(a, qpa, rqa, "DB_RQ", "rnic_rq_wqe", wr_id=2, num_sge=1,
         sge=sge(spec, 0x10001000, 4096, staga))
    post(b, qpb, sqb, "DB_SQ", "rnic_sq_wqe", wr_id=3, flags=sig,
         opcode=spec.value["wqe opcode"]["SEND"], num_sge=1,
         sge=sge(spec, 0x10000100, 100, stagb))
    poll_cq(cqb, "SEND")
    e = poll_cq(cqa, "RECV")
    assert e["wr_id"] == 2 and e["byte_len"] == 100 and e["qpn"] == qpa
    assert a.q.read(bufa + 4096, 100) == data[256:356], "Send: bytes differ"

    a.q.write(bufa + 8192, data[::-1])
    post(b, qpb, sqb, "DB_SQ", "rnic_sq_wqe", wr_id=4, flags=sig,
         opcode=spec.value["wqe opcode"]["READ"], num_sge=1,
         remote_stag=staga, remote_addr=0x10002000,
         sge=sge(spec, 0x10001000, 4096, stagb))
    assert poll_cq(cqb, "READ")["byte_len"] == 4096
    assert b.q.read(bufb + 4096, 4096) == data[::-1], "Read: bytes differ"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qemu", required=True)
    ap.add_argument("--spec", required=True)
    opt = ap.parse_args()
    spec = Spec(opt.spec)
    allow = "listen-allow=127.0.0.1,peer-allow=127.0.0.1"
    q = Qtest(opt.qemu, ["-device", "rnic," + allow] * 2)
    try:
        ident = Rnic.find(q, 0x1234, 0x7269)
        assert len(ident) == 2, f"{len(ident)} rnic devices found"
        a, b = (Rnic(q, spec, devfn, 0xc0000000 + i * 0x100000)
                for i, devfn in enumerate(ident))
        qps, mrs, cqs, pds = [], [], [], []
        for dev in (a, b):
            assert dev.rd("ID") == 0x43494e52        # "RNIC"
            assert dev.rd("VERSION") >> 16 == 1, "an ABI this driver knows"
            dev.enable()
            attr = dev.alloc(128)
            dev.command("QUERY_DEVICE", attr_addr=attr)
            limits = spec.unpack("rnic_device_attr", q.read(attr, 128))
            assert limits["abi_version"] == dev.rd("VERSION")
            assert limits["max_ird"] >= 1 and limits["max_ord"] >= 1
            pdn = dev.command("CREATE_PD")["pdn"]
            acc = spec.value["access"]
            mrs.append(reg_mr(dev, pdn, 3 * 4096,
                              acc["LOCAL_READ"] | acc["LOCAL_WRITE"] |
                              acc["REMOTE_READ"] | acc["REMOTE_WRITE"]))
            cq = create_cq(dev)
            qps.append(create_qp(dev, pdn, cq) + (cq,))
            cqs.append(cq)
            pds.append(pdn)
        listener = connect(spec, a, b, qps[0][0], qps[1][0])
        data_path(spec, a, b, qps[0], qps[1], mrs[0], mrs[1])

        b.command("DISCONNECT", qpn=qps[1][0])
        for dev, (qpn, *_), mr, cq, pdn in zip((a, b), qps, mrs, cqs, pds):
            assert dev.event("CONN_CLOSED")["arg0"] == 0, "not graceful"
            dev.command("DESTROY_QP", qpn=qpn)
            dev.command("DESTROY_CQ", cqn=cq.n)
            dev.command("DEREG_MR", stag=mr[1])
            dev.command("DESTROY_PD", pdn=pdn)
        a.command("UNLISTEN", listener_id=listener)
        a.command("UNLISTEN", "ERR_HANDLE", listener_id=listener)
    finally:
        q.close()
    print("spec: bring-up from docs/spec.md: PCI, rings, PD, MR, CQ, QP, "
          "connection, Write, Send, Read, teardown: all as the spec says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
