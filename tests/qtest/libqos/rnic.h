/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos helpers for the rnic device: bring-up as a driver does it, the
 * command queue, events, CQ entries, QPs and memory registration.
 */
#ifndef LIBQOS_RNIC_H
#define LIBQOS_RNIC_H

#include "../libqtest.h"
#include "pci-pc.h"
#include "malloc-pc.h"
#include "rnic/rnic-abi.h"

#define RNIC_TEST_CMDQ_LOG    4
#define RNIC_TEST_EQ_LOG      3
#define RNIC_TEST_MSI_MAGIC   0x4d534900u     /* | vector */
#define RNIC_TEST_TIMEOUT_US  (5 * G_USEC_PER_SEC)
#define RNIC_TEST_MR_IOVA     0x7f0000000000ull   /* of rnic_reg_mr() */
#define RNIC_TEST_PORT_SLOT   2       /* rnic_test_start_in_slot()'s port */
#define RNIC_TEST_MCH_PCIEXBAR 0x60   /* q35 MCH: ECAM base | enable */
#define RNIC_TEST_ECAM        0xb0000000ull

typedef struct RnicTest {
    QTestState *qts;
    QGuestAllocator *alloc;
    QPCIBus *bus;
    bool owner;             /* of qts, alloc and bus */
    QPCIDevice *dev;
    QPCIDevice *port;       /* the root port above dev, or NULL */
    QPCIBar regs;
    uint64_t cmdq, eq, msi_mem;
    uint32_t cmd_prod, eq_cons;
    uint8_t eq_log;         /* set before rnic_test_enable; 0: default */
    uint32_t udb;           /* doorbell page + 1 of CQs and QPs made next */
    QPCIBar udb_bar;        /* BAR 4, mapped by the first rnic_udb_wr() */
    uint64_t udb_size;
    char *cap_id;           /* RNIC_QTEST_CAPTURE: the device's id */
} RnicTest;

typedef struct RnicTestQp {
    uint32_t qpn;
    uint64_t sq, rq;
    uint8_t log;
    uint16_t sq_prod, rq_prod;
} RnicTestQp;

uint32_t rnic_rd(RnicTest *t, uint32_t reg);
void rnic_wr(RnicTest *t, uint32_t reg, uint32_t val);
/* A doorbell (or any offset) of doorbell page @page in BAR 4. */
void rnic_udb_wr(RnicTest *t, uint32_t page, uint32_t reg, uint32_t val);
uint32_t rnic_udb_rd(RnicTest *t, uint32_t page, uint32_t reg);

/*
 * True while a test runs with every rnic device on an IOThread
 * (-object iothread,id=rnicio -device rnic,iothread=rnicio,...).
 */
extern bool rnic_test_iothread;
/* @fn as @path (main loop) and as DIR/iothread/LEAF (on an IOThread). */
void rnic_test_add_both(const char *path, void (*fn)(void));

/* Bring-up: QEMU with "-device rnic<extra>", then rings and MSI-X. */
void rnic_test_start(RnicTest *t, const char *extra);
/*
 * The same behind a hot-pluggable PCIe root port (t->port), with the
 * port's config space reachable by DMA at rnic_test_port_ecam() (ECAM),
 * the device's at rnic_test_dev_ecam().
 */
void rnic_test_start_in_slot(RnicTest *t, const char *extra);
uint64_t rnic_test_port_ecam(RnicTest *t);
uint64_t rnic_test_dev_ecam(RnicTest *t);
/* Two rnic devices in one VM (ids a and b); stop b before a. */
void rnic_test_start_pair(RnicTest *a, RnicTest *b, const char *extra_a,
                          const char *extra_b);
/* The same with @machine's options (e.g. a vIOMMU) before the devices. */
void rnic_test_start_pair_on(RnicTest *a, RnicTest *b, const char *machine,
                             const char *extra_a, const char *extra_b);
/*
 * With RNIC_QTEST_CAPTURE=DIR in the environment every device records its
 * traffic to DIR/<test path>-<id>.pcapng, and rnic_test_stop() writes its
 * stat-* counters next to it (.stats: "name value" lines), for
 * tests/capture/check_capture.py (`make check-capture`) to compare with
 * what tshark decodes.
 */
/* qom-get of an integer or string property of device @id. */
uint64_t rnic_qom_int(RnicTest *t, const char *id, const char *prop);
char *rnic_qom_str(RnicTest *t, const char *id, const char *prop);
void rnic_test_enable(RnicTest *t);
void rnic_test_after_reset(RnicTest *t);
void rnic_test_stop(RnicTest *t);

/* MSI-X vectors write RNIC_TEST_MSI_MAGIC | vector to guest memory. */
void rnic_msix_setup(RnicTest *t);
bool rnic_msix_fired(RnicTest *t, int v);

/* Commands: post one and wait for its status. */
struct rnic_cmd rnic_cmd(RnicTest *t, uint8_t opcode, const void *payload,
                         size_t len);
/* Fills the next command slot, no doorbell, no interrupt asked. */
void rnic_cmd_queue(RnicTest *t, uint8_t opcode, const void *payload,
                    size_t len);
struct rnic_cmd rnic_cmd_ok(RnicTest *t, uint8_t opcode, const void *payload,
                            size_t len);
uint16_t rnic_cmd_status(RnicTest *t, uint8_t opcode, const void *payload,
                         size_t len);
bool rnic_next_event(RnicTest *t, struct rnic_event *ev);
/* Waits (in real time: sockets are involved) for the next event. */
void rnic_wait_event(RnicTest *t, struct rnic_event *ev);

uint32_t rnic_create_pd(RnicTest *t);
uint16_t rnic_reg_mr(RnicTest *t, uint32_t pdn, uint64_t buf, uint32_t len,
                     uint32_t access, uint8_t key, uint32_t *stag);
uint32_t rnic_create_cq(RnicTest *t, uint8_t log, uint8_t vector,
                        uint64_t *ring);
uint16_t rnic_try_create_qp(RnicTest *t, uint32_t pdn, uint32_t scq,
                            uint32_t rcq, uint8_t log, RnicTestQp *qp);
/* The same with rings the caller allocated (4 KiB aligned, 2^log WQEs). */
uint16_t rnic_create_qp_at(RnicTest *t, uint32_t pdn, uint32_t scq,
                           uint32_t rcq, uint8_t log, uint64_t sq,
                           uint64_t rq, RnicTestQp *qp);
uint16_t rnic_try_create_qp_srq(RnicTest *t, uint32_t pdn, uint32_t scq,
                                uint32_t rcq, uint32_t srqn, uint8_t log,
                                RnicTestQp *qp);
/* ... with RNIC_QP_FLAG_* (e.g. KERNEL). */
uint16_t rnic_try_create_qp_flags(RnicTest *t, uint32_t pdn, uint32_t scq,
                                  uint32_t rcq, uint32_t srqn, uint8_t log,
                                  uint16_t flags, RnicTestQp *qp);
/*
 * ALLOC_MR: max_pages slots, or with RNIC_ALLOC_MR_PHYS the PD's
 * physical STag (max_pages 0); the command's status.
 */
uint16_t rnic_alloc_mr(RnicTest *t, uint32_t pdn, uint32_t max_pages,
                       uint8_t key, uint8_t flags, uint32_t *stag);
/* An SRQ of 8 entries; @ring's qpn/rq/rq_prod describe it (no SQ). */
uint32_t rnic_create_srq(RnicTest *t, uint32_t pdn, RnicTestQp *ring);
void rnic_post_srq(RnicTest *t, RnicTestQp *srq, const struct rnic_rq_wqe *w);
void rnic_post_recv(RnicTest *t, RnicTestQp *qp, const struct rnic_rq_wqe *w);
void rnic_post_send(RnicTest *t, RnicTestQp *qp, const struct rnic_sq_wqe *w);
void rnic_post_sends(RnicTest *t, RnicTestQp *qp,
                     const struct rnic_sq_wqe *w, uint32_t n);
void rnic_modify_qp_state(RnicTest *t, uint32_t qpn, uint8_t state,
                          uint16_t expect);
uint8_t rnic_query_qp_state(RnicTest *t, uint32_t qpn);
bool rnic_read_cqe(RnicTest *t, uint64_t ring, uint8_t log, uint32_t index,
                   struct rnic_cq_entry *e);
/*
 * Waits (in real time: the bytes may cross a TCP connection) for the CQE
 * at *@cons, then consumes it: *@cons advances and the CQ doorbell says so.
 */
void rnic_wait_cqe(RnicTest *t, uint64_t ring, uint8_t log, uint32_t cqn,
                   uint32_t *cons, struct rnic_cq_entry *e);
/*
 * @a listens on 127.0.0.1, @b's QP @qpb connects with IRD = ORD = @ird_ord,
 * @a's QP @qpa accepts; returns once both saw CONN_ESTABLISHED.
 */
void rnic_connect_qps(RnicTest *a, uint32_t qpa, RnicTest *b, uint32_t qpb,
                      uint8_t ird_ord);
/* Lets the device's bottom halves run. */
void rnic_settle(RnicTest *t);

/* TCP on 127.0.0.1 for tests that play the remote peer; assert on error. */
/* @rcvbuf: SO_RCVBUF to set first (a small window), or 0. */
int rnic_tcp_connect(uint16_t port, int rcvbuf);
int rnic_tcp_listen(uint16_t *port);
int rnic_tcp_accept(int lfd);
void rnic_read_full(int fd, void *buf, size_t len);
void rnic_write_full(int fd, const void *buf, size_t len);
/*
 * The raw peer on @fd, connected to a listener of @t, asks for MPA rev 2
 * with RFC 6581 IRD/ORD 1/1 (C when @crc); @t ACCEPTs on @qpn; returns
 * once @t saw CONN_ESTABLISHED.  @strict: no other event may come first.
 */
void rnic_raw_peer_accept(RnicTest *t, int fd, uint32_t qpn, bool crc,
                          bool strict);

#endif /* LIBQOS_RNIC_H */
