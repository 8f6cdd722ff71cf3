# SPDX-License-Identifier: GPL-2.0-or-later
"""
iWARP verbs tests, run with rdma-core's suite (tests/e2e/rdma-core-suite.sh
copies this file into it): the checks the suite makes over RC QPs that it
connects by modify_qp, which no iWARP device can do, made here over QPs
that rdma_cm connects.  Each test forks a passive and an active process
(the suite's two_nodes_rdmacm_traffic) that connect the device to itself;
each side's QP is its own (created with ibv_create_qp, or ibv_create_qp_ex
for the ibv_wr_* API, and named to rdma_cm by its number), so the test
posts any work request the verbs have.

Where the suite waits for an InfiniBand acknowledgement, these tests go by
iWARP's rules (docs/spec.md, "Error completions"): a Write completes once
sent, so a Write is known placed only when a Read or Send behind it
completes, and a Write the target refuses shows as the target's Terminate,
which flushes the work requests behind it; a refused Read or Atomic
completes REM_ACCESS_ERR.
"""
import errno
import os
import socket
import struct
import unittest
from types import SimpleNamespace

from pyverbs.base import inc_rkey
from pyverbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
import pyverbs.cm_enums as ce
import pyverbs.enums as e

from tests.base import RDMACMBaseTest

PORT = "7471"
DEPTH = 16
REMOTE = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ |
          e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC |
          e.IBV_ACCESS_MW_BIND)
IMM = 0x12345678
WR_ID = 0x123                           # the suite's, for ibv_wr_* WRs


def int8b(byte):
    """@byte repeated in all 8 octets of a 64-bit value (the suite's
    int8b_from_int): the same in either byte order."""
    return int.from_bytes(bytes([byte]) * 8, "little")


class Side:
    """One end of an rdma_cm connection, on a CQ and QP of its own: an MR
    of 4096 bytes with @mr_access, a QP taken to INIT with @qp_access (if
    given), with @send_ops an extended QP for ibv_wr_*, and with @cq_ex an
    extended CQ (ibv_create_cq_ex, the suite's standard flags)."""

    def __init__(self, ip, passive, syncer, events=False, srq=0,
                 mr_access=REMOTE, qp_access=None, send_ops=0, cq_ex=False):
        self.passive = passive
        self.channel = CMEventChannel()
        self.listen_id = None
        if passive:
            self.listen_id = CMID(creator=self.channel,
                                  port_space=ce.RDMA_PS_TCP)
            self.listen_id.bind_addr(AddrInfo(
                src=ip, src_service=PORT, port_space=ce.RDMA_PS_TCP,
                flags=ce.RAI_PASSIVE))
            self.listen_id.listen()
            syncer.wait()
            self.id = self._expect(ce.RDMA_CM_EVENT_CONNECT_REQUEST)
        else:
            self.id = CMID(creator=self.channel, port_space=ce.RDMA_PS_TCP)
            self.id.resolve_addr(AddrInfo(src=ip, dst=ip, dst_service=PORT,
                                          port_space=ce.RDMA_PS_TCP))
            self._expect(ce.RDMA_CM_EVENT_ADDR_RESOLVED)
            syncer.wait()
            self.id.resolve_route()
            self._expect(ce.RDMA_CM_EVENT_ROUTE_RESOLVED)
        self.comp = CompChannel(self.id.context) if events else None
        if cq_ex:
            self.cq = CQEX(self.id.context, CqInitAttrEx(
                cqe=2 * DEPTH, wc_flags=e.IBV_WC_STANDARD_FLAGS))
        else:
            self.cq = CQ(self.id.context, 2 * DEPTH, None, self.comp, 0)
        # An SRQ of @srq entries takes the place of the receive queue.
        self.srq = SRQ(self.id.pd, SrqInitAttr(SrqAttr(max_wr=srq))) \
            if srq else None
        cap = QPCap(max_send_wr=DEPTH, max_recv_wr=0 if srq else DEPTH)
        attr = QPAttr()
        if qp_access is not None:
            attr.qp_access_flags = qp_access
        if send_ops:
            self.qp = QPEx(self.id.context, QPInitAttrEx(
                qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, srq=self.srq,
                cap=cap, pd=self.id.pd, send_ops_flags=send_ops,
                comp_mask=e.IBV_QP_INIT_ATTR_PD |
                e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS), attr)
        else:
            self.qp = QP(self.id.pd, QPInitAttr(
                qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, srq=self.srq,
                cap=cap), attr)
        self.mr = MR(self.id.pd, 4096, mr_access)
        param = ConnParam(resources=4, depth=4, qp_num=self.qp.qp_num)
        if passive:
            self.id.accept(param)
        else:
            self.id.connect(param)
        self._expect(ce.RDMA_CM_EVENT_ESTABLISHED)

    def _expect(self, event):
        ev = CMEvent(self.channel)
        got = ev.event_type
        child = None
        if got == ce.RDMA_CM_EVENT_CONNECT_REQUEST:
            child = CMID(creator=ev, listen_id=self.listen_id)
        ev.ack_cm_event()
        if got != event:
            raise AssertionError(f"rdma_cm event {got}, expected {event}")
        return child

    def wr(self, opcode, length, offset=0, lkey=None):
        """A signaled send WR over @length bytes of the MR at @offset."""
        return SendWR(opcode=opcode, num_sge=1,
                      sg=[SGE(self.mr.buf + offset, length,
                              self.mr.lkey if lkey is None else lkey)],
                      send_flags=e.IBV_SEND_SIGNALED)

    def post_rdma(self, opcode, length, rkey, raddr, offset=0):
        wr = self.wr(opcode, length, offset)
        wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)

    def post_ex(self, verb, *args, length=None):
        """One signaled WR through the extended API, as the suite's
        post_send_ex posts it: ibv_wr_start, ibv_wr_<verb>(*@args), an SGE
        of @length bytes at the MR's start (none if None),
        ibv_wr_complete."""
        qp = self.qp
        qp.wr_start()
        qp.wr_id = WR_ID
        qp.wr_flags = e.IBV_SEND_SIGNALED
        getattr(qp, "wr_" + verb)(*args)
        if length is not None:
            qp.wr_set_sge(SGE(self.mr.buf, length, self.mr.lkey))
        qp.wr_complete()

    def fill(self, byte, length, offset=0):
        self.mr.write(bytes([byte]) * length, length, offset)

    def write_read(self, n, rkey, waddr, raddr, offset):
        """@n bytes of "w" written to @waddr, then @n read from @raddr into
        the MR at @offset: the bytes read."""
        self.mr.write(b"w" * n, n, 0)
        self.post_rdma(e.IBV_WR_RDMA_WRITE, n, rkey, waddr)
        self.completion()
        self.post_rdma(e.IBV_WR_RDMA_READ, n, rkey, raddr, offset=offset)
        assert self.completion().byte_len == n
        return self.mr.read(n, offset)

    def post_recv(self, length, offset=0, wr_id=0):
        wr = RecvWR(wr_id=wr_id, num_sge=1,
                    sg=[SGE(self.mr.buf + offset, length, self.mr.lkey)])
        (self.srq or self.qp).post_recv(wr)

    def poll(self):
        """The next work completion, whatever its status."""
        if isinstance(self.cq, CQEX):
            return self._poll_ex()
        while True:
            n, wcs = self.cq.poll()
            if n:
                return wcs[0]

    def _poll_ex(self):
        """The next completion of an extended CQ, read field by field in
        one poll session, as the suite's poll_cq_ex reads it."""
        while self.cq.start_poll(PollCqAttr()) == errno.ENOENT:
            pass
        wc = SimpleNamespace(
            status=self.cq.status, wr_id=self.cq.wr_id,
            opcode=self.cq.read_opcode(), byte_len=self.cq.read_byte_len(),
            wc_flags=self.cq.read_wc_flags(), imm_data=0)
        if wc.wc_flags & e.IBV_WC_WITH_IMM:
            wc.imm_data = self.cq.read_imm_data()
        self.cq.end_poll()
        return wc

    def completion(self, opcode=None, status=e.IBV_WC_SUCCESS):
        """The next work completion, which must have @status (and
        @opcode, if given)."""
        wc = self.poll()
        assert wc.status == status, \
            f"completion status {wc.status} ({wc.opcode}), want {status}"
        assert opcode is None or wc.opcode == opcode, \
            f"completion opcode {wc.opcode}, want {opcode}"
        return wc

    def expect_refused(self, rkey, raddr):
        """A Read of @raddr through @rkey, which the target must refuse.
        A Read, not a Write: an iWARP Write completes once sent, and the
        target's refusal (a Terminate) only ends the stream after it."""
        self.post_rdma(e.IBV_WR_RDMA_READ, 64, rkey, raddr, offset=3072)
        self.completion(status=e.IBV_WC_REM_ACCESS_ERR)

    def expect_write_refused(self, rkey, raddr, n, ex=False):
        """An RDMA Write of @n bytes to @raddr through @rkey (by ibv_wr_*
        if @ex), which the target must refuse.  It completes once sent, as
        every iWARP Write does; the target's refusal is its Terminate,
        which names the Write (not a Read), so our QP flushes what follows:
        a zero-length Read behind it, which the target would have answered
        unchecked, completes WR_FLUSH_ERR."""
        if ex:
            self.post_ex("rdma_write", rkey, raddr, length=n)
        else:
            self.post_rdma(e.IBV_WR_RDMA_WRITE, n, rkey, raddr)
        self.completion(e.IBV_WC_RDMA_WRITE)
        self.post_rdma(e.IBV_WR_RDMA_READ, 0, rkey, raddr)
        self.completion(status=e.IBV_WC_WR_FLUSH_ERR)

    def close(self):
        self.id.disconnect()


class IwarpTestBase(RDMACMBaseTest):
    """Two sides, each running a flow over its own connected QP."""

    def _two_sides(self, body, srq=0, **side):
        """@body(side, passive) on both sides, each on a Side made with
        @side (and an SRQ of @srq entries on the passive one)."""
        self.two_nodes_rdmacm_traffic(None, self._flow, body=body, srq=srq,
                                      side=side)

    def _flow(self, connection_resources=None, passive=None, body=None,
              srq=0, side=None):
        try:
            s = Side(self.ip_addr, passive, self.syncer,
                     srq=srq if passive else 0, **side)
            body(s, passive)
            self.syncer.wait()
            s.close()
        except Exception as ex:
            self._rdmacm_exception_handler(passive, ex)

    def _skip_unless(self, what):
        """Skip (before forking) when the device lacks @what: "atomics",
        "mw" (type 2 windows) or "qp_ex" (ibv_create_qp_ex's send ops)."""
        with Context(name=self.dev_name) as ctx:
            if what == "atomics":
                if ctx.query_device().atomic_caps == e.IBV_ATOMIC_NONE:
                    raise unittest.SkipTest("the device has no atomics")
                return
            with PD(ctx) as pd, CQ(ctx, 1) as cq:
                try:
                    if what == "mw":
                        MW(pd, e.IBV_MW_TYPE_2).close()
                    else:
                        QPEx(ctx, QPInitAttrEx(
                            qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, pd=pd,
                            cap=QPCap(1, 1),
                            send_ops_flags=e.IBV_QP_EX_WITH_SEND,
                            comp_mask=e.IBV_QP_INIT_ATTR_PD |
                            e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)).close()
                except PyverbsRDMAError as ex:
                    if ex.error_code == errno.EOPNOTSUPP:
                        raise unittest.SkipTest(f"no {what}: {ex}")
                    raise

    def _swap_keys(self, side, passive):
        """Each side's (rkey, MR address) to the other: the peer's."""
        mine = (side.mr.rkey, side.mr.buf)
        if passive:
            self.notifier.put(mine)
            self.syncer.wait()          # the active side takes it,
            self.syncer.wait()          # then puts its own
            return self.notifier.get()
        self.syncer.wait()
        theirs = self.notifier.get()
        self.notifier.put(mine)
        self.syncer.wait()
        return theirs

    def _turns(self, side, passive, turn, iters=10):
        """The suite's traffic: @iters rounds of two turns, the active side
        (the suite's client, bytes "c") initiating the first and the
        passive side (its server, "s") the second.  @turn(side, peer, i)
        is a generator run on both sides, @peer the other side's (rkey,
        address) on the initiator and None on the target: each side
        prepares, then the initiator acts, then the target checks."""
        peer = self._swap_keys(side, passive)
        for i in range(iters):
            for initiator in (not passive, passive):
                steps = turn(side, peer if initiator else None, i)
                next(steps)             # prepare
                self.syncer.wait()
                if initiator:
                    next(steps, None)   # act
                self.syncer.wait()
                if not initiator:
                    next(steps, None)   # check

    @staticmethod
    def _bytes(passive):
        """The suite's message bytes: "s" from its server (our passive
        side), "c" from its client (our active side)."""
        return b"s"[0] if passive else b"c"[0]


class IwarpRCTestCase(IwarpTestBase):
    """RC traffic over QPs that rdma_cm connected."""

    # ---- atomics (RFC 7306), as test_atomic checks them ----

    def _atomic(self, side, passive, op):
        orig, add, swap = 0x1122334455667788, 5, 0x0102030405060708
        if passive:
            side.mr.write(struct.pack("<Q", orig), 8, 0)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            self.syncer.wait()          # the active side's atomic is done
            got = struct.unpack("<Q", side.mr.read(8, 0))[0]
            want = orig + add if op == "fadd" else swap
            assert got == want, f"target holds {got:#x}, want {want:#x}"
            return
        rkey, raddr = self.notifier.get()
        opcode = (e.IBV_WR_ATOMIC_FETCH_AND_ADD if op == "fadd"
                  else e.IBV_WR_ATOMIC_CMP_AND_SWP)
        wr = side.wr(opcode, 8)
        wr.set_wr_atomic(rkey, raddr, add if op == "fadd" else orig, swap)
        side.qp.post_send(wr)
        wc = side.completion()
        assert wc.byte_len == 8, f"byte_len {wc.byte_len}"
        got = struct.unpack("<Q", side.mr.read(8, 0))[0]
        assert got == orig, f"returned {got:#x}, want the original {orig:#x}"
        self.syncer.wait()

    def test_rdmacm_atomic_fetch_and_add(self):
        self._skip_unless("atomics")
        self._two_sides(lambda s, p: self._atomic(s, p, "fadd"))

    def test_rdmacm_atomic_cmp_and_swap(self):
        self._skip_unless("atomics")
        self._two_sides(lambda s, p: self._atomic(s, p, "cswap"))

    # ---- test_atomic's invalid_* cases ----

    ATOMIC_ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC

    def _atomic_refused(self, side, passive, case, status):
        """A Fetch and Add (add 5) spoiled as test_atomic's @case spoils
        it: it completes with @status, the QP gets IBV_EVENT_QP_FATAL, and
        the target's 16 bytes stay as they were (with "qp_access" the
        Atomic runs instead, see its test)."""
        orig = struct.pack("<QQ", 0x1122334455667788, 0x99aabbccddeeff00)
        if passive:
            side.mr.write(orig, 16, 0)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            self.syncer.wait()          # the Atomic has completed
            want = orig
            if status == e.IBV_WC_SUCCESS:
                want = struct.pack("<Q", 0x1122334455667788 + 5) + orig[8:]
            assert side.mr.read(16, 0) == want, \
                f"target holds {side.mr.read(16, 0).hex()}, want {want.hex()}"
            return
        rkey, raddr = self.notifier.get()
        lkey = inc_rkey(side.mr.lkey) if case == "lkey" else None
        if case == "rkey":
            rkey = inc_rkey(rkey)       # the same STag with another key
        if case == "non_aligned":
            raddr += 1
        wr = side.wr(e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8, lkey=lkey)
        wr.set_wr_atomic(rkey, raddr, 5, 0)
        side.qp.post_send(wr)
        if status == e.IBV_WC_SUCCESS:
            side.completion(e.IBV_WC_FETCH_ADD)
        else:
            side.completion(status=status)  # a failed WR's opcode: undefined
            event = side.id.context.get_async_event()
            event.ack()
            assert event.event_type == e.IBV_EVENT_QP_FATAL, \
                f"async event {event.event_type}"
        self.syncer.wait()

    def _refused_atomic(self, case, status, **side):
        self._skip_unless("atomics")
        side.setdefault("mr_access", self.ATOMIC_ACCESS)
        self._two_sides(
            lambda s, p: self._atomic_refused(s, p, case, status), **side)

    def test_rdmacm_atomic_invalid_lkey(self):
        """The result buffer's lkey with another key: our own SGE fails
        its STag check before the Atomic goes out, LOC_PROT_ERR (as on
        InfiniBand), and our QP sends a Terminate."""
        self._refused_atomic("lkey", e.IBV_WC_LOC_PROT_ERR)

    # The target refuses an Atomic with a Terminate (RDMAP remote
    # protection) that quotes the Atomic Request, where InfiniBand NAKs it:
    # the Atomic completes REM_ACCESS_ERR either way (docs/spec.md, "Error
    # completions"). These check that, the Terminate's IBV_EVENT_QP_FATAL,
    # and that the target was not changed.

    def test_rdmacm_atomic_invalid_rkey(self):
        """The target STag with another key: refused (Terminate 0/1/0x00,
        invalid STag)."""
        self._refused_atomic("rkey", e.IBV_WC_REM_ACCESS_ERR)

    def test_rdmacm_atomic_invalid_mr_access(self):
        """The target region without REMOTE_ATOMIC: refused for its rights
        (Terminate 0/1/0x02)."""
        self._refused_atomic("mr_access", e.IBV_WC_REM_ACCESS_ERR,
                             mr_access=e.IBV_ACCESS_LOCAL_WRITE)

    def test_rdmacm_atomic_non_aligned_addr(self):
        """A target address 1 past an 8-byte boundary: iWARP counts it as
        a bounds failure of the STag (Terminate 0/1/0x01) where InfiniBand
        sees an invalid request (REM_INV_REQ_ERR)."""
        self._refused_atomic("non_aligned", e.IBV_WC_REM_ACCESS_ERR)

    def test_rdmacm_atomic_invalid_qp_access(self):
        """Both QPs taken to INIT with access LOCAL_WRITE only, which
        InfiniBand checks for each request.  iWARP checks the rights of
        the STag a request names (RFC 5040's access check; RFC 7306's
        REMOTE_ATOMIC): rnic's QPs hold none (MODIFY_QP carries only the
        state, docs/spec.md), and siw keeps the flags and checks none of
        them.  So modify_qp takes the flags and the Atomic on a region
        with REMOTE_ATOMIC runs: the target's value is added to."""
        self._refused_atomic("qp_access", e.IBV_WC_SUCCESS,
                             qp_access=e.IBV_ACCESS_LOCAL_WRITE)

    # ---- RDMA Write and Read, then a Send, on the QP's own WRs ----

    def _rdma(self, side, passive):
        n = 1000
        if passive:
            side.mr.write(b"r" * n, n, 2048)
            side.post_recv(64)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            wc = side.completion()      # the Send, last
            assert wc.opcode == e.IBV_WC_RECV and wc.byte_len == 4, \
                f"receive {wc.opcode}, {wc.byte_len} bytes"
            assert side.mr.read(4, 0) == b"done", "the Send's bytes"
            assert side.mr.read(n - 4, 4) == b"w" * (n - 4), \
                "Write did not land"
            return
        rkey, raddr = self.notifier.get()
        assert side.write_read(n, rkey, raddr, raddr + 2048, 1024) == \
            b"r" * n, "Read brought other bytes"
        side.mr.write(b"done", 4, 0)
        side.qp.post_send(side.wr(e.IBV_WR_SEND, 4))
        side.completion()

    def test_rdmacm_rc_write_read_send(self):
        self._two_sides(self._rdma)

    # ---- RDMA Write with immediate (RFC 7306's Immediate Data) ----

    def _write_imm(self, side, passive):
        n = 3000
        if passive:
            side.post_recv(64)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            wc = side.completion()
            assert wc.opcode == e.IBV_WC_RECV_RDMA_WITH_IMM and \
                wc.wc_flags & e.IBV_WC_WITH_IMM, f"receive {wc.opcode}"
            assert socket.ntohl(wc.imm_data) == IMM, f"imm {wc.imm_data:#x}"
            assert side.mr.read(n, 1024) == b"i" * n, "Write did not land"
            return
        rkey, raddr = self.notifier.get()
        side.mr.write(b"i" * n, n, 0)
        wr = side.wr(e.IBV_WR_RDMA_WRITE_WITH_IMM, n)
        wr.set_wr_rdma(rkey, raddr + 1024)
        wr.imm_data = socket.htonl(IMM)
        side.qp.post_send(wr)
        wc = side.completion()
        assert wc.opcode == e.IBV_WC_RDMA_WRITE, f"completion {wc.opcode}"

    def test_rdmacm_rc_write_with_imm(self):
        self._two_sides(self._write_imm)

    # ---- completion events, as test_cq_events checks them ----

    def _events(self, side, passive):
        if passive:
            side.post_recv(64)
            side.cq.req_notify()
            self.syncer.wait()          # armed before the Send comes
            side.comp.get_cq_event(side.cq)
            side.cq.ack_events(1)
            wc = side.completion()
            assert wc.opcode == e.IBV_WC_RECV and wc.byte_len == 32
            return
        side.cq.req_notify()
        self.syncer.wait()
        side.qp.post_send(side.wr(e.IBV_WR_SEND, 32))
        side.comp.get_cq_event(side.cq)
        side.cq.ack_events(1)
        side.completion()

    def test_rdmacm_cq_events(self):
        self._two_sides(self._events, events=True)

    # ---- a shared receive queue, as test_srq checks it ----

    SRQ_WR = 8

    def _srq(self, side, passive):
        """Three rounds of Sends into an SRQ of 8: its receives complete
        with their own wr_ids and bytes, and each round's entries are free
        again for the next (an SRQ's tags)."""
        n = self.SRQ_WR
        for r in range(3):
            if passive:
                for i in range(n):
                    side.post_recv(64, i * 64, wr_id=1000 * r + i)
                self.syncer.wait()      # posted before the Sends
                for i in range(n):
                    wc = side.completion()
                    assert wc.opcode == e.IBV_WC_RECV and \
                        wc.wr_id == 1000 * r + i and wc.byte_len == 64, \
                        f"receive {wc.opcode}, wr_id {wc.wr_id}"
                    assert side.mr.read(64, i * 64) == \
                        bytes([r * n + i]) * 64, f"Send {i} of round {r}"
                self.syncer.wait()
                continue
            self.syncer.wait()
            for i in range(n):
                side.mr.write(bytes([r * n + i]) * 64, 64, 0)
                side.qp.post_send(side.wr(e.IBV_WR_SEND, 64))
                side.completion()
            self.syncer.wait()

    def test_rdmacm_srq_traffic(self):
        self._two_sides(self._srq, srq=self.SRQ_WR)

    # ---- the SRQ limit event, as test_modify_srq_limit checks it ----

    def _srq_limit(self, side, passive):
        """10 receives posted and the limit armed at 7, which query_srq
        reports; 4 Sends leave 6: IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ,
        which is disarmed after (query_srq says 0)."""
        if passive:
            for i in range(10):
                side.post_recv(64, i * 64, wr_id=i)
            side.srq.modify(SrqAttr(srq_limit=7), e.IBV_SRQ_LIMIT)
            assert side.srq.query().srq_limit == 7
            self.syncer.wait()
            for i in range(4):
                assert side.completion().wr_id == i
            event = side.id.context.get_async_event()
            event.ack()
            assert event.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED, \
                f"async event {event.event_type}"
            assert side.srq.query().srq_limit == 0
            self.syncer.wait()
            return
        self.syncer.wait()
        for i in range(4):
            side.qp.post_send(side.wr(e.IBV_WR_SEND, 64))
            side.completion()
        self.syncer.wait()

    def test_rdmacm_srq_limit(self):
        self._two_sides(self._srq_limit, srq=16)

    # ---- test_qpex's RC tests: the ibv_wr_* API ----

    MSG = 1024                          # the suite's message size
    TAIL = 16                           # bytes past it that must not change

    def _send_turn(self, ex, imm=False):
        """A turn of the suite's traffic(): a Send (with ibv_wr_send if
        @ex) or, with @imm, an RDMA Write with immediate data into the
        target's MR, into which its receive is posted too."""
        n, tail = self.MSG, self.TAIL

        def turn(side, peer, i):
            own = self._bytes(side.passive)
            side.fill(own, n + tail)
            if peer is None:
                side.post_recv(n)
            yield
            if peer is not None:
                rkey, raddr = peer
                if imm:
                    side.post_ex("rdma_write_imm", rkey, raddr, IMM,
                                 length=n)
                elif ex:
                    side.post_ex("send", length=n)
                else:
                    side.qp.post_send(side.wr(e.IBV_WR_SEND, n))
                wc = side.completion(e.IBV_WC_RDMA_WRITE if imm
                                     else e.IBV_WC_SEND)
                assert not ex or wc.wr_id == WR_ID, f"wr_id {wc.wr_id:#x}"
                return
            wc = side.completion(e.IBV_WC_RECV_RDMA_WITH_IMM if imm
                                 else e.IBV_WC_RECV)
            if imm:
                assert wc.wc_flags & e.IBV_WC_WITH_IMM and \
                    socket.ntohl(wc.imm_data) == IMM, \
                    f"flags {wc.wc_flags:#x}, imm {wc.imm_data:#x}"
            else:
                assert wc.byte_len == n, f"received {wc.byte_len} bytes"
            peer_bytes = self._bytes(not side.passive)
            assert side.mr.read(n + tail, 0) == \
                bytes([peer_bytes]) * n + bytes([own]) * tail, \
                f"round {i}: received other bytes"
        return turn

    def _rdma_turn(self, verb, n):
        """A turn of the suite's rdma_traffic(): an RDMA Write or Read of
        @n bytes by ibv_wr_rdma_<verb>, between the two MRs' starts.  A
        Write is known placed when a zero-length Read behind it completes
        (iWARP acknowledges no Write)."""
        tail = self.TAIL

        def turn(side, peer, i):
            own = self._bytes(side.passive)
            side.fill(own, n + tail)
            yield
            theirs = bytes([self._bytes(not side.passive)]) * n
            if peer is not None:
                rkey, raddr = peer
                side.post_ex("rdma_" + verb, rkey, raddr, length=n)
                wc = side.completion(e.IBV_WC_RDMA_READ if verb == "read"
                                     else e.IBV_WC_RDMA_WRITE)
                assert wc.wr_id == WR_ID, f"wr_id {wc.wr_id:#x}"
                if verb == "write":
                    side.post_rdma(e.IBV_WR_RDMA_READ, 0, rkey, raddr)
                    side.completion(e.IBV_WC_RDMA_READ)
                    return
                assert wc.byte_len == n, f"Read of {wc.byte_len} bytes"
                got = side.mr.read(n + tail, 0)
            else:
                got = side.mr.read(n + tail, 0)
                if verb == "read":
                    theirs = bytes([own]) * n   # a Read leaves its source
            assert got == theirs + bytes([own]) * tail, \
                f"round {i}: {verb} left other bytes"
        return turn

    def _atomic_turn(self, verb):
        """A turn of the suite's atomic_traffic(): the initiator's 8 bytes
        hold 0x02s, the target's 0x01s; Fetch and Add adds 0x0202..02;
        Compare and Swap compares with 0x0202..02 (no swap, as test_qpex)
        in even rounds and with 0x0101..01 (swap in 0, as test_atomic's
        second call) in odd ones.  The original value returns either
        way."""
        def turn(side, peer, i):
            side.mr.write(bytes([2 if peer else 1]) * 8, 8, 0)
            yield
            swapped = verb == "cmp_swp" and i % 2
            if peer is not None:
                rkey, raddr = peer
                if verb == "fetch_add":
                    side.post_ex("atomic_fetch_add", rkey, raddr, int8b(2),
                                 length=8)
                else:
                    side.post_ex("atomic_cmp_swp", rkey, raddr,
                                 int8b(1 if swapped else 2), int8b(0),
                                 length=8)
                wc = side.completion(e.IBV_WC_FETCH_ADD if verb == "fetch_add"
                                     else e.IBV_WC_COMP_SWAP)
                assert wc.wr_id == WR_ID and wc.byte_len == 8, \
                    f"wr_id {wc.wr_id:#x}, byte_len {wc.byte_len}"
                got, want = side.mr.read(8, 0), bytes([1]) * 8
            else:
                got = side.mr.read(8, 0)
                want = bytes([3 if verb == "fetch_add" else
                              0 if swapped else 1]) * 8
            assert got == want, f"round {i}: {got.hex()}, want {want.hex()}"
        return turn

    QPEX = {
        "send": e.IBV_QP_EX_WITH_SEND,
        "write": e.IBV_QP_EX_WITH_RDMA_WRITE,
        "write_imm": e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
        "read": e.IBV_QP_EX_WITH_RDMA_READ,
        "fetch_add": e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
        "cmp_swp": e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
    }

    def _qp_ex(self, op, turn):
        """@turn's traffic on extended QPs made for @op only, as
        test_qpex makes them."""
        self._skip_unless("qp_ex")
        if op in ("fetch_add", "cmp_swp"):
            self._skip_unless("atomics")
        self._two_sides(lambda s, p: self._turns(s, p, turn),
                        send_ops=self.QPEX[op])

    def test_rdmacm_qp_ex_rc_send(self):
        self._qp_ex("send", self._send_turn(ex=True))

    def test_rdmacm_qp_ex_rc_rdma_write(self):
        self._qp_ex("write", self._rdma_turn("write", self.MSG))

    def test_rdmacm_qp_ex_rc_rdma_write_imm(self):
        self._qp_ex("write_imm", self._send_turn(ex=True, imm=True))

    def test_rdmacm_qp_ex_rc_rdma_read(self):
        self._qp_ex("read", self._rdma_turn("read", self.MSG))

    def test_rdmacm_qp_ex_rc_rdma_write_zero_length(self):
        """Zero-length Writes complete and place nothing."""
        self._qp_ex("write", self._rdma_turn("write", 0))

    def test_rdmacm_qp_ex_rc_rdma_read_zero_size(self):
        """Zero-length Reads complete (byte_len 0) and bring nothing."""
        self._qp_ex("read", self._rdma_turn("read", 0))

    def test_rdmacm_qp_ex_rc_atomic_fetch_add(self):
        self._qp_ex("fetch_add", self._atomic_turn("fetch_add"))

    def test_rdmacm_qp_ex_rc_atomic_cmp_swp(self):
        self._qp_ex("cmp_swp", self._atomic_turn("cmp_swp"))

    def test_rdmacm_rc_traffic_cq_ex(self):
        """test_rc_traffic_cq_ex: the suite's Send traffic both ways, every
        completion read from an extended CQ."""
        self._two_sides(
            lambda s, p: self._turns(s, p, self._send_turn(ex=False)),
            cq_ex=True)

    # ---- test_relaxed_ordering: traffic on relaxed-ordering MRs ----

    def test_rdmacm_ro_rc_traffic(self):
        """test_ro_rc_traffic: the suite's Send traffic both ways on MRs
        registered LOCAL_WRITE | RELAXED_ORDERING (an optional flag a
        device may ignore: the bytes must still arrive)."""
        self._two_sides(
            lambda s, p: self._turns(s, p, self._send_turn(ex=False)),
            mr_access=e.IBV_ACCESS_LOCAL_WRITE |
            e.IBV_ACCESS_RELAXED_ORDERING)


class IwarpRCKernelPathTestCase(IwarpRCTestCase):
    """The same through the kernel: librnic without direct mode posts and
    polls by system calls, so rnic.ko builds the WQEs (RNIC_DIRECT=0 is
    read by the forked sides when they open the device)."""

    def setUp(self):
        super().setUp()
        os.environ["RNIC_DIRECT"] = "0"

    def tearDown(self):
        os.environ.pop("RNIC_DIRECT", None)
        super().tearDown()


class IwarpMemoryTestCase(IwarpTestBase):
    """Windows and re-registration, as test_mw and test_mr check them.  A
    window is bound through the send queue, which needs librnic's direct
    mode (the uverbs post_send command carries no bind)."""

    WIN = 1024                          # the window: MR bytes 1024..2047

    def _target(self, side, mw_type):
        """The passive side's window over its MR, bound; its rkey."""
        side.mw = MW(side.id.pd, mw_type)
        info = MWBindInfo(side.mr, side.mr.buf + self.WIN, self.WIN,
                          e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ)
        if mw_type == e.IBV_MW_TYPE_1:
            side.qp.bind_mw(side.mw, MWBind(info, e.IBV_SEND_SIGNALED))
            rkey = side.mw.rkey
        else:
            wr = SendWR(opcode=e.IBV_WR_BIND_MW,
                        send_flags=e.IBV_SEND_SIGNALED)
            wr.set_bind_wr(side.mw, info)
            side.qp.post_send(wr)
            rkey = wr.rkey
        side.completion(e.IBV_WC_BIND_MW)
        return rkey

    def _window(self, side, passive, mw_type):
        """Write and Read through the window, then a Read before its
        start, which the target refuses (the initiator's QP ends in
        error)."""
        n = 256
        if passive:
            side.mr.write(b"r" * n, n, self.WIN + 512)
            side.mr.write(b"b" * n, n, self.WIN - n)
            rkey = self._target(side, mw_type)
            self.notifier.put((rkey, side.mr.buf + self.WIN))
            self.syncer.wait()          # the Write, the Read, the refusal
            assert side.mr.read(n, self.WIN) == b"w" * n, \
                "Write through the window did not land"
            assert side.mr.read(n, self.WIN - n) == b"b" * n, \
                "bytes before the window changed"
            return
        rkey, raddr = self.notifier.get()
        assert side.write_read(n, rkey, raddr, raddr + 512, 2048) == \
            b"r" * n, "Read through the window"
        side.expect_refused(rkey, raddr - n)
        self.syncer.wait()

    def test_rdmacm_mw_type1(self):
        self._skip_unless("mw")
        self._two_sides(lambda s, p: self._window(s, p, e.IBV_MW_TYPE_1))

    def test_rdmacm_mw_type2(self):
        self._skip_unless("mw")
        self._two_sides(lambda s, p: self._window(s, p, e.IBV_MW_TYPE_2))

    def _invalidated(self, side, passive, mw_type, how):
        """test_mw's invalidations: a window written and read through, then
        invalidated by its owner (@how: "rebind" binds a type 1 window
        again with length 0, "local" posts LOCAL_INV of a type 2 window,
        "dealloc" frees it); a Read through its old key is refused."""
        n = 256
        if passive:
            rkey = self._target(side, mw_type)
            self.notifier.put((rkey, side.mr.buf + self.WIN))
            self.syncer.wait()          # written and read through
            assert side.mr.read(n, self.WIN) == b"w" * n, \
                "Write through the window did not land"
            if how == "rebind":
                side.qp.bind_mw(side.mw, MWBind(
                    MWBindInfo(side.mr, side.mr.buf, 0, 0),
                    e.IBV_SEND_SIGNALED))
                side.completion(e.IBV_WC_BIND_MW)
                assert side.mw.rkey != rkey, "the rebind kept the key"
            elif how == "local":
                wr = SendWR(opcode=e.IBV_WR_LOCAL_INV,
                            send_flags=e.IBV_SEND_SIGNALED)
                wr.imm_data = rkey      # the union's invalidate_rkey
                side.qp.post_send(wr)
                side.completion(e.IBV_WC_LOCAL_INV)
            else:
                side.mw.close()
            self.syncer.wait()
            return
        rkey, raddr = self.notifier.get()
        assert side.write_read(n, rkey, raddr, raddr, 2048) == b"w" * n, \
            "Read back through the window"
        self.syncer.wait()
        self.syncer.wait()              # invalidated
        side.expect_refused(rkey, raddr)

    def test_rdmacm_invalidate_mw_type1(self):
        self._skip_unless("mw")
        self._two_sides(lambda s, p: self._invalidated(
            s, p, e.IBV_MW_TYPE_1, "rebind"))

    def test_rdmacm_mw_type2_invalidate_local(self):
        self._skip_unless("mw")
        self._two_sides(lambda s, p: self._invalidated(
            s, p, e.IBV_MW_TYPE_2, "local"))

    def test_rdmacm_mw_type2_invalidate_dealloc(self):
        self._skip_unless("mw")
        self._two_sides(lambda s, p: self._invalidated(
            s, p, e.IBV_MW_TYPE_2, "dealloc"))

    def _remote_inv(self, side, passive):
        """A type 2 window invalidated by the peer's Send with Invalidate;
        a Read through it afterwards is refused."""
        if passive:
            rkey = self._target(side, e.IBV_MW_TYPE_2)
            side.post_recv(64)
            self.notifier.put((rkey, side.mr.buf + self.WIN))
            wc = side.completion()
            assert wc.opcode == e.IBV_WC_RECV and \
                wc.wc_flags & e.IBV_WC_WITH_INV, \
                f"receive {wc.opcode}, flags {wc.wc_flags:#x}"
            assert wc.imm_data == rkey, \
                f"invalidated {wc.imm_data:#x}, want {rkey:#x}"
            self.syncer.wait()
            return
        rkey, raddr = self.notifier.get()
        side.post_rdma(e.IBV_WR_RDMA_WRITE, 64, rkey, raddr)
        side.completion()
        wr = side.wr(e.IBV_WR_SEND_WITH_INV, 8)
        wr.imm_data = rkey              # the union's invalidate_rkey
        side.qp.post_send(wr)
        side.completion()
        side.expect_refused(rkey, raddr)
        self.syncer.wait()

    def test_rdmacm_mw_remote_invalidate(self):
        self._skip_unless("mw")
        self._two_sides(self._remote_inv)

    def _bind_ex(self, side, passive):
        """test_qp_ex_rc_bind_mw: a type 2 window bound by ibv_wr_bind_mw
        with the suite's new key (ibv_inc_rkey) over the whole region,
        which has REMOTE_WRITE, but with access LOCAL_WRITE only (a window
        holds remote rights alone, so it gets none); a Write through it by
        ibv_wr_rdma_write is refused and places nothing."""
        n = 512
        if passive:
            side.fill(b"s"[0], n)
            side.mw = MW(side.id.pd, e.IBV_MW_TYPE_2)
            rkey = inc_rkey(side.mw.rkey)
            side.post_ex("bind_mw", side.mw, rkey, MWBindInfo(
                side.mr, side.mr.buf, side.mr.length,
                e.IBV_ACCESS_LOCAL_WRITE))
            wc = side.completion(e.IBV_WC_BIND_MW)
            assert wc.wr_id == WR_ID, f"wr_id {wc.wr_id:#x}"
            self.notifier.put((rkey, side.mr.buf))
            self.syncer.wait()          # refused
            assert side.mr.read(n, 0) == b"s" * n, "the Write was placed"
            return
        rkey, raddr = self.notifier.get()
        side.fill(b"c"[0], n)
        side.expect_write_refused(rkey, raddr, n, ex=True)
        self.syncer.wait()

    def test_rdmacm_qp_ex_rc_bind_mw(self):
        self._skip_unless("qp_ex")
        self._skip_unless("mw")
        self._two_sides(
            self._bind_ex,
            send_ops=e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_BIND_MW,
            mr_access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
            e.IBV_ACCESS_MW_BIND)

    def _rereg(self, side, passive, flags):
        """The target re-registers its MR (rights, then pages or PD too)
        and the peer writes with the keys it got after: the bytes land,
        unless the MR went to another PD than the QP's."""
        n = 512
        moved = bool(flags & e.IBV_REREG_MR_CHANGE_PD)
        if passive:
            mr, pd, addr = side.mr, side.id.pd, 0
            mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, pd,
                     access=e.IBV_ACCESS_LOCAL_WRITE)
            if flags & e.IBV_REREG_MR_CHANGE_TRANSLATION:
                side.pages = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)
                addr = side.pages.buf + 4096
            if moved:
                side.pd2 = pd = PD(side.id.context)
            mr.rereg(flags | e.IBV_REREG_MR_CHANGE_ACCESS, pd, addr=addr,
                     length=4096 if addr else 0, access=REMOTE)
            mr.write(b"o" * n, n, 0)
            self.notifier.put((mr.rkey, mr.buf))
            self.syncer.wait()
            want = b"o" * n if moved else b"x" * n
            assert mr.read(n, 0) == want, "the MR's bytes after rereg"
            return
        rkey, raddr = self.notifier.get()
        side.mr.write(b"x" * n, n, 0)
        if moved:
            side.expect_refused(rkey, raddr)
        else:
            side.post_rdma(e.IBV_WR_RDMA_WRITE, n, rkey, raddr)
            side.completion()
        self.syncer.wait()

    def test_rdmacm_rereg_mr_access(self):
        self._two_sides(lambda s, p: self._rereg(s, p, 0))

    def test_rdmacm_rereg_mr_addr(self):
        self._two_sides(lambda s, p: self._rereg(
            s, p, e.IBV_REREG_MR_CHANGE_TRANSLATION))

    def test_rdmacm_rereg_mr_pd(self):
        self._two_sides(lambda s, p: self._rereg(
            s, p, e.IBV_REREG_MR_CHANGE_PD))

    def _rereg_bad(self, side, passive):
        """test_mr_rereg_access_bad_flow: a Write into a region with
        LOCAL_WRITE | REMOTE_WRITE lands (a Send behind it says so); the
        region re-registered with LOCAL_WRITE only, a Write with its new
        key is refused and places nothing."""
        n = 512
        if passive:
            side.post_recv(64, 2048)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            side.completion(e.IBV_WC_RECV)
            assert side.mr.read(n, 0) == b"x" * n, "Write before rereg"
            side.mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, side.id.pd,
                          access=e.IBV_ACCESS_LOCAL_WRITE)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            self.syncer.wait()          # refused
            assert side.mr.read(n, 0) == b"x" * n, "Write after rereg"
            return
        rkey, raddr = self.notifier.get()
        side.fill(b"x"[0], n)
        side.post_rdma(e.IBV_WR_RDMA_WRITE, n, rkey, raddr)
        side.completion(e.IBV_WC_RDMA_WRITE)
        side.qp.post_send(side.wr(e.IBV_WR_SEND, 8, offset=n))
        side.completion(e.IBV_WC_SEND)
        rkey, raddr = self.notifier.get()
        side.fill(b"y"[0], n)
        side.expect_write_refused(rkey, raddr, n)
        self.syncer.wait()

    def test_rdmacm_rereg_mr_access_bad_flow(self):
        self._two_sides(self._rereg_bad, mr_access=e.IBV_ACCESS_LOCAL_WRITE |
                        e.IBV_ACCESS_REMOTE_WRITE)
