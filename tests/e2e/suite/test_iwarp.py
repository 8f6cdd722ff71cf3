# SPDX-License-Identifier: GPL-2.0-or-later
"""
iWARP verbs tests, run with rdma-core's suite (tests/e2e/rdma-core-suite.sh
copies this file into it): the checks the suite makes over RC QPs that it
connects by modify_qp, which no iWARP device can do, made here over QPs
that rdma_cm connects.  Each test forks a passive and an active process
(the suite's two_nodes_rdmacm_traffic) that connect the device to itself;
each side's QP is its own (created with ibv_create_qp, named to rdma_cm by
its number), so the test posts any work request the verbs have.
"""
import os
import socket
import struct
import unittest

from pyverbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam
from pyverbs.cq import CQ, CompChannel
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
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


class Side:
    """One end of an rdma_cm connection, on a CQ and QP of its own."""

    def __init__(self, ip, passive, syncer, events=False, srq=0):
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
        self.cq = CQ(self.id.context, 2 * DEPTH, None, self.comp, 0)
        # An SRQ of @srq entries takes the place of the receive queue.
        self.srq = SRQ(self.id.pd, SrqInitAttr(SrqAttr(max_wr=srq))) \
            if srq else None
        cap = QPCap(max_send_wr=DEPTH, max_recv_wr=0 if srq else DEPTH)
        self.qp = QP(self.id.pd, QPInitAttr(qp_type=e.IBV_QPT_RC,
                                            scq=self.cq, rcq=self.cq,
                                            srq=self.srq, cap=cap), QPAttr())
        self.mr = MR(self.id.pd, 4096, REMOTE)
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

    def wr(self, opcode, length, offset=0):
        """A signaled send WR over @length bytes of the MR at @offset."""
        return SendWR(opcode=opcode, num_sge=1,
                      sg=[SGE(self.mr.buf + offset, length, self.mr.lkey)],
                      send_flags=e.IBV_SEND_SIGNALED)

    def post_rdma(self, opcode, length, rkey, raddr, offset=0):
        wr = self.wr(opcode, length, offset)
        wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)

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

    def completion(self):
        """The next work completion, which must be a success."""
        while True:
            n, wcs = self.cq.poll()
            if n:
                wc = wcs[0]
                assert wc.status == e.IBV_WC_SUCCESS, \
                    f"completion status {wc.status} ({wc.opcode})"
                return wc

    def close(self):
        self.id.disconnect()


class IwarpTestBase(RDMACMBaseTest):
    """Two sides, each running a flow over its own connected QP."""

    def _two_sides(self, flow, **kwargs):
        self.two_nodes_rdmacm_traffic(None, getattr(self, flow), **kwargs)

    def _run(self, side_flow, passive, events=False, srq=0):
        try:
            side = Side(self.ip_addr, passive, self.syncer, events,
                        srq if passive else 0)
            side_flow(side, passive)
            self.syncer.wait()
            side.close()
        except Exception as ex:
            self._rdmacm_exception_handler(passive, ex)

    def _skip_without_atomics(self):
        from pyverbs.device import Context
        with Context(name=self.dev_name) as ctx:
            if ctx.query_device().atomic_caps == e.IBV_ATOMIC_NONE:
                raise unittest.SkipTest("the device has no atomics")


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

    def atomic_flow(self, connection_resources=None, passive=None, op=None):
        self._run(lambda s, p: self._atomic(s, p, op), passive)

    def test_rdmacm_atomic_fetch_and_add(self):
        self._skip_without_atomics()
        self._two_sides("atomic_flow", op="fadd")

    def test_rdmacm_atomic_cmp_and_swap(self):
        self._skip_without_atomics()
        self._two_sides("atomic_flow", op="cswap")

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

    def rdma_flow(self, connection_resources=None, passive=None):
        self._run(self._rdma, passive)

    def test_rdmacm_rc_write_read_send(self):
        self._two_sides("rdma_flow")

    # ---- RDMA Write with immediate (RFC 7306's Immediate Data) ----

    def _write_imm(self, side, passive):
        n, imm = 3000, 0x12345678
        if passive:
            side.post_recv(64)
            self.notifier.put((side.mr.rkey, side.mr.buf))
            wc = side.completion()
            assert wc.opcode == e.IBV_WC_RECV_RDMA_WITH_IMM and \
                wc.wc_flags & e.IBV_WC_WITH_IMM, f"receive {wc.opcode}"
            assert socket.ntohl(wc.imm_data) == imm, f"imm {wc.imm_data:#x}"
            assert side.mr.read(n, 1024) == b"i" * n, "Write did not land"
            return
        rkey, raddr = self.notifier.get()
        side.mr.write(b"i" * n, n, 0)
        wr = side.wr(e.IBV_WR_RDMA_WRITE_WITH_IMM, n)
        wr.set_wr_rdma(rkey, raddr + 1024)
        wr.imm_data = socket.htonl(imm)
        side.qp.post_send(wr)
        wc = side.completion()
        assert wc.opcode == e.IBV_WC_RDMA_WRITE, f"completion {wc.opcode}"

    def write_imm_flow(self, connection_resources=None, passive=None):
        self._run(self._write_imm, passive)

    def test_rdmacm_rc_write_with_imm(self):
        self._two_sides("write_imm_flow")

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

    def events_flow(self, connection_resources=None, passive=None):
        self._run(self._events, passive, events=True)

    def test_rdmacm_cq_events(self):
        self._two_sides("events_flow")

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

    def srq_flow(self, connection_resources=None, passive=None):
        self._run(self._srq, passive, srq=self.SRQ_WR)

    def test_rdmacm_srq_traffic(self):
        self._two_sides("srq_flow")

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

    def srq_limit_flow(self, connection_resources=None, passive=None):
        self._run(self._srq_limit, passive, srq=16)

    def test_rdmacm_srq_limit(self):
        self._two_sides("srq_limit_flow")


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
        wc = side.completion()
        assert wc.opcode == e.IBV_WC_BIND_MW, f"completion {wc.opcode}"
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
        self._expect_refused(side, rkey, raddr - n)
        self.syncer.wait()

    def _expect_refused(self, side, rkey, raddr):
        """A Read of @raddr through @rkey, which the target must refuse.
        A Read, not a Write: an iWARP Write completes once sent, and the
        target's refusal (a Terminate) only ends the stream after it."""
        side.post_rdma(e.IBV_WR_RDMA_READ, 64, rkey, raddr, offset=3072)
        while True:
            n, wcs = side.cq.poll()
            if n:
                assert wcs[0].status == e.IBV_WC_REM_ACCESS_ERR, \
                    f"completion status {wcs[0].status}, want REM_ACCESS_ERR"
                return

    def window_flow(self, connection_resources=None, passive=None,
                    mw_type=None):
        self._run(lambda s, p: self._window(s, p, mw_type), passive)

    def test_rdmacm_mw_type1(self):
        self._two_sides("window_flow", mw_type=e.IBV_MW_TYPE_1)

    def test_rdmacm_mw_type2(self):
        self._two_sides("window_flow", mw_type=e.IBV_MW_TYPE_2)

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
        self._expect_refused(side, rkey, raddr)
        self.syncer.wait()

    def remote_inv_flow(self, connection_resources=None, passive=None):
        self._run(self._remote_inv, passive)

    def test_rdmacm_mw_remote_invalidate(self):
        self._two_sides("remote_inv_flow")

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
            self._expect_refused(side, rkey, raddr)
        else:
            side.post_rdma(e.IBV_WR_RDMA_WRITE, n, rkey, raddr)
            side.completion()
        self.syncer.wait()

    def rereg_flow(self, connection_resources=None, passive=None, flags=0):
        self._run(lambda s, p: self._rereg(s, p, flags), passive)

    def test_rdmacm_rereg_mr_access(self):
        self._two_sides("rereg_flow", flags=0)

    def test_rdmacm_rereg_mr_addr(self):
        self._two_sides("rereg_flow",
                        flags=e.IBV_REREG_MR_CHANGE_TRANSLATION)

    def test_rdmacm_rereg_mr_pd(self):
        self._two_sides("rereg_flow", flags=e.IBV_REREG_MR_CHANGE_PD)
