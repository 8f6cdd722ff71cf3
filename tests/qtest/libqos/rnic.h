/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos for the rnic device: the qgraph node "rnic" (on a pci-bus; it
 * produces pci-device), so that qos-test walks it, and helpers built on
 * its object: bring-up as a driver does it, the command queue, events, CQ
 * entries, QPs and memory registration, and QEMU started on q35 with one
 * or two devices for the qtests that need more than the node's machine.
 */
#ifndef LIBQOS_RNIC_H
#define LIBQOS_RNIC_H

#include "../libqtest.h"
#include "pci-pc.h"
#include "malloc-pc.h"
#include "qgraph.h"
#include "rnic/rnic-abi.h"

#define QRNIC_CMDQ_LOG      4
#define QRNIC_EQ_LOG        3
#define QRNIC_MSI_MAGIC     0x4d534900u     /* | vector */
#define QRNIC_TIMEOUT_US    (5 * G_USEC_PER_SEC)
#define QRNIC_MR_IOVA       0x7f0000000000ull   /* of qrnic_reg_mr() */
#define QRNIC_PORT_SLOT     2       /* qrnic_test_start_in_slot()'s port */
#define QRNIC_MCH_PCIEXBAR  0x60    /* q35 MCH: ECAM base | enable */
#define QRNIC_ECAM          0xb0000000ull

/* One device: the node's object, or one of those qrnic_test_start*() made. */
typedef struct QRnic {
    QOSGraphObject obj;
    QTestState *qts;
    QGuestAllocator *alloc;
    QPCIBus *bus;
    bool owner;             /* of qts, alloc and bus */
    QPCIDevice *dev;
    QPCIDevice *port;       /* the root port above dev, or NULL */
    QPCIBar regs;
    uint64_t cmdq, eq, msi_mem;
    uint32_t cmd_prod, eq_cons;
    uint8_t eq_log;         /* set before qrnic_test_enable; 0: default */
    uint32_t udb;           /* doorbell page + 1 of CQs and QPs made next */
    QPCIBar udb_bar;        /* BAR 4, mapped by the first qrnic_udb_wr() */
    uint64_t udb_size;
    char *cap_id;           /* RNIC_QTEST_CAPTURE: the device's id */
    char *args;             /* the owner's QEMU arguments, for a migration */
    int index;              /* among the VM's rnic devices */
} QRnic;

typedef struct QRnicQp {
    uint32_t qpn;
    uint64_t sq, rq;
    uint8_t log;
    uint16_t sq_prod, rq_prod;
} QRnicQp;

uint32_t qrnic_rd(QRnic *t, uint32_t reg);
void qrnic_wr(QRnic *t, uint32_t reg, uint32_t val);
/* A doorbell (or any offset) of doorbell page @page in BAR 4. */
void qrnic_udb_wr(QRnic *t, uint32_t page, uint32_t reg, uint32_t val);
uint32_t qrnic_udb_rd(QRnic *t, uint32_t page, uint32_t reg);

/*
 * True while a test runs with every rnic device on one IOThread of the
 * test's (-object iothread,id=rnicio -device rnic,iothread=rnicio,...).
 */
extern bool qrnic_test_iothread;
/* True while a test runs with every rnic device on the main loop. */
extern bool qrnic_test_main_loop;
/*
 * Whether the devices' work runs beside qtest, in real time: on an
 * IOThread, the device's own (the default) or qrnic_test_iothread's.
 */
bool qrnic_test_threaded(void);
/*
 * @fn three times: as @path (each device on an IOThread of its own, the
 * default), as DIR/iothread/LEAF (qrnic_test_iothread) and as
 * DIR/main-loop/LEAF (qrnic_test_main_loop).
 */
void qrnic_test_add_both(const char *path, void (*fn)(void));
/*
 * Threads of @qts's QEMU named "IO rnic..." (QEMU started with -name
 * debug-threads=on): the devices' own IOThreads ("IO rnic0") and the
 * tests' ("IO rnicio"); the first one's id in *@tid if @tid.
 */
int qrnic_iothreads(QTestState *qts, int64_t *tid);

/* Bring-up: QEMU with "-device rnic<extra>", then rings and MSI-X. */
void qrnic_test_start(QRnic *t, const char *extra);
/*
 * The same behind a hot-pluggable PCIe root port (t->port), with the
 * port's config space reachable by DMA at qrnic_test_port_ecam() (ECAM),
 * the device's at qrnic_test_dev_ecam().
 */
void qrnic_test_start_in_slot(QRnic *t, const char *extra);
uint64_t qrnic_test_port_ecam(QRnic *t);
uint64_t qrnic_test_dev_ecam(QRnic *t);
/* Two rnic devices in one VM (ids a and b); stop b before a. */
void qrnic_test_start_pair(QRnic *a, QRnic *b, const char *extra_a,
                           const char *extra_b);
/* The same with @machine's options (e.g. a vIOMMU) before the devices. */
void qrnic_test_start_pair_on(QRnic *a, QRnic *b, const char *machine,
                              const char *extra_a, const char *extra_b);
/*
 * With RNIC_QTEST_CAPTURE=DIR in the environment every device records its
 * traffic to DIR/<test path>-<id>.pcapng, and qrnic_test_stop() writes its
 * stat-* counters next to it (.stats: "name value" lines), for
 * tests/capture/check_capture.py (`make check-capture`) to compare with
 * what tshark decodes.
 */
/* qom-get of an integer or string property of device @id. */
uint64_t qrnic_qom_int(QRnic *t, const char *id, const char *prop);
char *qrnic_qom_str(QRnic *t, const char *id, const char *prop);
void qrnic_test_enable(QRnic *t);
void qrnic_test_after_reset(QRnic *t);
void qrnic_test_stop(QRnic *t);
/*
 * Migrates @t's VM (with @b, the pair's other device, or NULL) to a new
 * QEMU with the same arguments through a file, as `migrate file:` and
 * `-incoming file:` do, and goes on with the new process: the driver's
 * view (rings, allocator, indices) stays, the old process quits.
 */
void qrnic_test_migrate(QRnic *t, QRnic *b);

/* MSI-X vectors write QRNIC_MSI_MAGIC | vector to guest memory. */
void qrnic_msix_setup(QRnic *t);
bool qrnic_msix_fired(QRnic *t, int v);

/* Commands: post one and wait for its status. */
struct rnic_cmd qrnic_cmd(QRnic *t, uint8_t opcode, const void *payload,
                          size_t len);
/* Fills the next command slot, no doorbell, no interrupt asked. */
void qrnic_cmd_queue(QRnic *t, uint8_t opcode, const void *payload,
                     size_t len);
struct rnic_cmd qrnic_cmd_ok(QRnic *t, uint8_t opcode, const void *payload,
                             size_t len);
uint16_t qrnic_cmd_status(QRnic *t, uint8_t opcode, const void *payload,
                          size_t len);
bool qrnic_next_event(QRnic *t, struct rnic_event *ev);
/* Waits (in real time: sockets are involved) for the next event. */
void qrnic_wait_event(QRnic *t, struct rnic_event *ev);
/* The same, and asserts its type. */
void qrnic_expect_event(QRnic *t, uint8_t type, struct rnic_event *ev);

uint32_t qrnic_create_pd(QRnic *t);
uint16_t qrnic_reg_mr(QRnic *t, uint32_t pdn, uint64_t buf, uint32_t len,
                      uint32_t access, uint8_t key, uint32_t *stag);
uint32_t qrnic_create_cq(QRnic *t, uint8_t log, uint8_t vector,
                         uint64_t *ring);
uint16_t qrnic_try_create_qp(QRnic *t, uint32_t pdn, uint32_t scq,
                             uint32_t rcq, uint8_t log, QRnicQp *qp);
/* The same with rings the caller allocated (4 KiB aligned, 2^log WQEs). */
uint16_t qrnic_create_qp_at(QRnic *t, uint32_t pdn, uint32_t scq,
                            uint32_t rcq, uint8_t log, uint64_t sq,
                            uint64_t rq, QRnicQp *qp);
uint16_t qrnic_try_create_qp_srq(QRnic *t, uint32_t pdn, uint32_t scq,
                                 uint32_t rcq, uint32_t srqn, uint8_t log,
                                 QRnicQp *qp);
/* ... with RNIC_QP_FLAG_* (e.g. KERNEL). */
uint16_t qrnic_try_create_qp_flags(QRnic *t, uint32_t pdn, uint32_t scq,
                                   uint32_t rcq, uint32_t srqn, uint8_t log,
                                   uint16_t flags, QRnicQp *qp);
/*
 * ALLOC_MR: max_pages slots, or with RNIC_ALLOC_MR_PHYS the PD's
 * physical STag (max_pages 0); the command's status.
 */
uint16_t qrnic_alloc_mr(QRnic *t, uint32_t pdn, uint32_t max_pages,
                        uint8_t key, uint8_t flags, uint32_t *stag);
/* An SRQ of 8 entries; @ring's qpn/rq/rq_prod describe it (no SQ). */
uint32_t qrnic_create_srq(QRnic *t, uint32_t pdn, QRnicQp *ring);
void qrnic_post_srq(QRnic *t, QRnicQp *srq, const struct rnic_rq_wqe *w);
/* One scatter/gather entry: @len octets at @addr of @stag. */
struct rnic_wqe_sge qrnic_sge(uint32_t stag, uint64_t addr, uint32_t len);
/* @len octets of a pattern that @seed varies, at guest address @gpa. */
void qrnic_fill(QTestState *qts, uint64_t gpa, uint32_t len, uint8_t seed);
void qrnic_post_recv(QRnic *t, QRnicQp *qp, const struct rnic_rq_wqe *w);
void qrnic_post_send(QRnic *t, QRnicQp *qp, const struct rnic_sq_wqe *w);
void qrnic_post_sends(QRnic *t, QRnicQp *qp,
                      const struct rnic_sq_wqe *w, uint32_t n);
void qrnic_modify_qp_state(QRnic *t, uint32_t qpn, uint8_t state,
                           uint16_t expect);
uint8_t qrnic_query_qp_state(QRnic *t, uint32_t qpn);
bool qrnic_read_cqe(QRnic *t, uint64_t ring, uint8_t log, uint32_t index,
                    struct rnic_cq_entry *e);
/*
 * Waits (in real time: the bytes may cross a TCP connection) for the CQE
 * at *@cons, then consumes it: *@cons advances and the CQ doorbell says so.
 */
void qrnic_wait_cqe(QRnic *t, uint64_t ring, uint8_t log, uint32_t cqn,
                    uint32_t *cons, struct rnic_cq_entry *e);
/* 127.0.0.1:@port as commands name it. */
struct rnic_sockaddr qrnic_loopback(uint16_t port);
/*
 * @a listens on 127.0.0.1, @b's QP @qpb connects with IRD = ORD = @ird_ord,
 * @a's QP @qpa accepts; returns once both saw CONN_ESTABLISHED.
 */
void qrnic_connect_qps(QRnic *a, uint32_t qpa, QRnic *b, uint32_t qpb,
                       uint8_t ird_ord);
/* Lets the device's bottom halves run. */
void qrnic_settle(QRnic *t);

/*
 * TCP on 127.0.0.1 for tests that play the remote peer (rnic-peer.h speaks
 * iWARP on it); assert on error.
 */
/* @rcvbuf: SO_RCVBUF to set first (a small window), or 0. */
int qrnic_tcp_connect(uint16_t port, int rcvbuf);
int qrnic_tcp_listen(uint16_t *port);
int qrnic_tcp_accept(int lfd);
void qrnic_read_full(int fd, void *buf, size_t len);
void qrnic_write_full(int fd, const void *buf, size_t len);

#endif /* LIBQOS_RNIC_H */
