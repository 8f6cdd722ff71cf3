/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic programming model: PCI identity, BARs, registers, the command queue,
 * work queues, completions and events.
 *
 * The single source of truth for everything a driver sees of the device.
 * The QEMU device model, the Linux guest driver and the tests include this
 * file; docs/spec.md describes the same layout in prose.  All multi-byte
 * fields are little-endian; every structure has a fixed size that is
 * checked at compile time at the end of this file.
 */
#ifndef RNIC_ABI_H
#define RNIC_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* ---- PCI identity (docs/spec.md "Identity") ---------------------------- */
#define RNIC_PCI_VENDOR_ID      0x1234
#define RNIC_PCI_DEVICE_ID      0x7269
#define RNIC_PCI_SUBSYS_ID      0x0001
#define RNIC_PCI_REVISION       0x01
#define RNIC_PCI_CLASS          0x0280  /* network controller, other */

/* ---- BARs --------------------------------------------------------------- */
#define RNIC_BAR_REGS           0       /* registers and doorbells */
#define RNIC_BAR_REGS_SIZE      0x1000
#define RNIC_BAR_MSIX           2       /* MSI-X table and PBA */
/*
 * Doorbell pages a driver may map into a process, one per 4 KiB
 * (property udb-pages).  Each page has DB_SQ..DB_SRQ at their BAR 0
 * offsets; a doorbell through page n reaches only queues created with
 * udb = n + 1 (docs/spec.md "Doorbell pages").
 */
#define RNIC_BAR_UDB            4
#define RNIC_UDB_PAGE_SIZE      0x1000
#define RNIC_UDB_PAGES_MAX      4096

/* MSI-X vector 0 signals command completions and events; CQs name theirs. */
#define RNIC_MSIX_VEC_ADMIN     0
#define RNIC_MSIX_VECTORS       8

/* ---- BAR 0 registers: 32-bit accesses only ------------------------------ */
#define RNIC_REG_ID             0x000   /* RO: RNIC_ID_MAGIC */
#define RNIC_REG_VERSION        0x004   /* RO: ABI version, see below */
#define RNIC_REG_SCRATCH        0x008   /* RW: no effect; reset value 0 */
#define RNIC_REG_STATUS         0x00c   /* RO: RNIC_STATUS_* */
#define RNIC_REG_CONTROL        0x010   /* RW: RNIC_CONTROL_* */

#define RNIC_REG_CMDQ_BASE_LO   0x020   /* RW: ring address, 4 KiB aligned */
#define RNIC_REG_CMDQ_BASE_HI   0x024
#define RNIC_REG_CMDQ_LOG_SIZE  0x028   /* RW: log2(entries), 1..12 */
#define RNIC_REG_CMDQ_PROD      0x02c   /* WO doorbell: producer index */
#define RNIC_REG_CMDQ_CONS      0x030   /* RO: commands completed */

#define RNIC_REG_EQ_BASE_LO     0x040   /* RW: event ring, 4 KiB aligned */
#define RNIC_REG_EQ_BASE_HI     0x044
#define RNIC_REG_EQ_LOG_SIZE    0x048   /* RW: log2(entries), 1..12 */
#define RNIC_REG_EQ_CONS        0x04c   /* RW: driver's consumer index */
#define RNIC_REG_EQ_PROD        0x050   /* RO: events written */

#define RNIC_REG_DB_SQ          0x100   /* WO: qpn | producer index << 16 */
#define RNIC_REG_DB_RQ          0x104   /* WO: qpn | producer index << 16 */
#define RNIC_REG_DB_CQ          0x108   /* WO: cqn | consumer index << 16 */
#define RNIC_REG_DB_CQ_ARM      0x10c   /* WO: cqn | RNIC_DB_ARM_* */
#define RNIC_REG_DB_SRQ         0x110   /* WO: srqn | producer index << 16 */

#define RNIC_DB_ID(v)           ((v) & 0xffff)
#define RNIC_DB_INDEX(v)        ((v) >> 16)
#define RNIC_DB_VALUE(id, idx)  (((uint32_t)(idx) << 16) | ((id) & 0xffff))

#define RNIC_ID_MAGIC           0x43494e52u     /* "RNIC" in memory order */
#define RNIC_ABI_MAJOR          1   /* docs/spec.md "ABI versions" */
#define RNIC_ABI_MINOR          2
#define RNIC_VERSION_VALUE      ((RNIC_ABI_MAJOR << 16) | RNIC_ABI_MINOR)

#define RNIC_STATUS_READY       (1u << 0)   /* enabled, rings accepted */
#define RNIC_STATUS_FATAL       (1u << 1)   /* see the FATAL event */
#define RNIC_STATUS_EQ_OVERFLOW (1u << 2)   /* events were dropped */

#define RNIC_CONTROL_ENABLE     (1u << 0)
#define RNIC_CONTROL_RESET      (1u << 1)   /* self-clearing */

#define RNIC_DB_ARM_NEXT        (1u << 16)  /* interrupt on next CQE */
#define RNIC_DB_ARM_SOLICITED   (1u << 17)  /* ... next solicited or failed */

/* ---- Command queue (docs/spec.md "Command queue") ---------------------- */
/*
 * A ring of 64-byte descriptors in guest memory.  The driver fills the slot
 * at its producer index, sets status to RNIC_CMD_STATUS_PENDING and writes
 * the new producer index to CMDQ_PROD.  The device executes commands in
 * order, writes outputs into the same slot, writes status last, advances
 * CMDQ_CONS and, if RNIC_CMD_FLAG_IRQ is set, signals RNIC_MSIX_VEC_ADMIN.
 */
enum rnic_cmd_opcode {
    RNIC_CMD_QUERY_DEVICE   = 0x01,
    RNIC_CMD_CREATE_PD      = 0x02,
    RNIC_CMD_DESTROY_PD     = 0x03,
    RNIC_CMD_REG_MR         = 0x04,
    RNIC_CMD_DEREG_MR       = 0x05,
    RNIC_CMD_ALLOC_MW       = 0x06,
    RNIC_CMD_BIND_MW        = 0x07,
    RNIC_CMD_DEALLOC_MW     = 0x08,
    RNIC_CMD_CREATE_CQ      = 0x09,
    RNIC_CMD_DESTROY_CQ     = 0x0a,
    RNIC_CMD_CREATE_QP      = 0x0b,
    RNIC_CMD_MODIFY_QP      = 0x0c,
    RNIC_CMD_QUERY_QP       = 0x0d,
    RNIC_CMD_DESTROY_QP     = 0x0e,
    RNIC_CMD_CREATE_SRQ     = 0x0f,
    RNIC_CMD_DESTROY_SRQ    = 0x10,
    RNIC_CMD_LISTEN         = 0x11,
    RNIC_CMD_UNLISTEN       = 0x12,
    RNIC_CMD_CONNECT        = 0x13,
    RNIC_CMD_ACCEPT         = 0x14,
    RNIC_CMD_REJECT         = 0x15,
    RNIC_CMD_DISCONNECT     = 0x16,
    RNIC_CMD_QUERY_CONN     = 0x17,
    RNIC_CMD_INVALIDATE     = 0x18,
    RNIC_CMD_ALLOC_MR       = 0x19,
    RNIC_CMD_MODIFY_SRQ     = 0x1a,     /* ABI 1.2 */
};

enum rnic_cmd_status {
    RNIC_CMD_OK             = 0x0000,
    RNIC_CMD_ERR_OPCODE     = 0x0001,   /* unknown opcode */
    RNIC_CMD_ERR_PARAM      = 0x0002,   /* a field out of range */
    RNIC_CMD_ERR_RESOURCE   = 0x0003,   /* a table or limit is full */
    RNIC_CMD_ERR_HANDLE     = 0x0004,   /* no such PD/STag/CQ/QP/SRQ/listener
                                         * or connection */
    RNIC_CMD_ERR_BUSY       = 0x0005,   /* object still in use */
    RNIC_CMD_ERR_STATE      = 0x0006,   /* not allowed in this state */
    RNIC_CMD_ERR_DMA        = 0x0007,   /* a guest address was not readable
                                         * (or, for outputs, writable) */
    RNIC_CMD_ERR_ACCESS     = 0x0008,   /* access flags or PD do not match */
    RNIC_CMD_ERR_DENIED     = 0x0009,   /* address not allowed by the host */
    RNIC_CMD_ERR_ADDRINUSE  = 0x000a,   /* host could not bind the address */
    RNIC_CMD_STATUS_PENDING = 0xffff,   /* written by the driver */
};

#define RNIC_CMD_FLAG_IRQ       (1u << 0)

#define RNIC_CMD_SIZE           64
#define RNIC_CMD_PAYLOAD        56

struct rnic_cmd {
    uint8_t  opcode;
    uint8_t  flags;
    uint16_t status;
    uint32_t cookie;            /* echoed; for the driver's bookkeeping */
    union {
        uint8_t raw[RNIC_CMD_PAYLOAD];
        uint32_t w[RNIC_CMD_PAYLOAD / 4];
    } u;
};

/*
 * Command payloads (docs/spec.md "Commands"), one layout rule: a command
 * that acts on an object names it in the payload's first 32-bit word
 * (offset 0), and a command that creates one returns its handle there.
 * Each struct below says which opcodes use it; "in" fields are read,
 * "out" fields written back; rsvd and fields an opcode does not use must
 * be 0.  Every byte is a named field: no padding the compiler adds.
 * Each fits RNIC_CMD_PAYLOAD: the device's command table
 * (hw/rnic/rnic-cmdq.c) checks it at build time.
 */
struct rnic_cmd_query_device {      /* QUERY_DEVICE */
    uint64_t attr_addr;             /* in: guest buffer for a struct
                                     * rnic_device_attr, RNIC_DEVICE_ATTR_SIZE */
};

struct rnic_cmd_pd {                /* CREATE_PD, DESTROY_PD */
    uint32_t pdn;                   /* out: CREATE_PD; in: DESTROY_PD */
};

/* Access flags of MRs, MWs and binds. */
#define RNIC_ACC_LOCAL_READ      (1u << 0)
#define RNIC_ACC_LOCAL_WRITE     (1u << 1)
#define RNIC_ACC_REMOTE_READ     (1u << 2)
#define RNIC_ACC_REMOTE_WRITE    (1u << 3)
#define RNIC_ACC_REMOTE_ATOMIC   (1u << 4)
#define RNIC_ACC_MW_BIND         (1u << 5)
#define RNIC_ACC_ALL             0x3fu       /* every RNIC_ACC_* bit */

/* Invalidation policy of an STag (docs/spec.md "Invalidation policy"). */
#define RNIC_MR_POLICY_DEFAULT    0   /* the device's stag-default */
#define RNIC_MR_POLICY_PERSISTENT 1
#define RNIC_MR_POLICY_ONE_SHOT   2
#define RNIC_MR_NO_REMOTE_INV     (1u << 7)   /* refuse Send with Invalidate */
#define RNIC_MR_MAX_PAGES         (1u << 20)  /* REG_MR's npages at most */

struct rnic_cmd_reg_mr {            /* REG_MR */
    uint32_t stag;                  /* out */
    uint32_t pdn;                   /* in */
    uint32_t access;                /* in: RNIC_ACC_* */
    uint32_t npages;                /* in: entries at pbl_addr: exactly the
                                     * pages the bytes span */
    uint64_t iova;                  /* in: tagged offset of the first byte */
    uint64_t length;                /* in: bytes */
    uint64_t pbl_addr;              /* in: array of npages u64 page addresses */
    uint32_t first_byte_offset;     /* in: offset of iova in page 0 */
    uint8_t  page_shift;            /* in: 12..21 */
    uint8_t  key;                   /* in: low 8 bits of the STag */
    uint8_t  policy;                /* in: RNIC_MR_POLICY_* | flags */
    uint8_t  rsvd;
};

/*
 * ALLOC_MR: a region with a page-list slot of max_pages entries and
 * no pages, invalid until a FAST_REG work request fills it.  With
 * RNIC_ALLOC_MR_PHYS: a physical STag of the PD instead (a new one each
 * call; max_pages 0): valid
 * at once, tagged offset = bus address, local read and write only, usable
 * only by RNIC_QP_FLAG_KERNEL QPs, never from the wire.
 */
#define RNIC_ALLOC_MR_PHYS          (1u << 0)
#define RNIC_FAST_REG_MAX_PAGES     4096    /* max_pages at most */

struct rnic_cmd_alloc_mr {          /* ALLOC_MR */
    uint32_t stag;                  /* out */
    uint32_t pdn;                   /* in */
    uint32_t max_pages;             /* in: 1..RNIC_FAST_REG_MAX_PAGES */
    uint8_t  key;                   /* in: low 8 bits of the STag */
    uint8_t  flags;                 /* in: RNIC_ALLOC_MR_* */
    uint16_t rsvd;
};

struct rnic_cmd_stag {              /* DEREG_MR, DEALLOC_MW, INVALIDATE */
    uint32_t stag;                  /* in */
};

struct rnic_cmd_alloc_mw {          /* ALLOC_MW */
    uint32_t stag;                  /* out */
    uint32_t pdn;                   /* in */
    uint8_t  type;                  /* in: 1 or 2 */
    uint8_t  key;                   /* in: low 8 bits of the STag */
    uint16_t rsvd;
};

struct rnic_cmd_bind_mw {           /* BIND_MW: type 1 windows only */
    uint32_t mw_stag;               /* in */
    uint32_t mr_stag;               /* in */
    uint64_t addr;                  /* in: tagged offset within the MR */
    uint64_t length;                /* in */
    uint32_t access;                /* in: RNIC_ACC_REMOTE_* */
    uint8_t  key;                   /* in: new key of the window */
    uint8_t  policy;                /* in: RNIC_MR_POLICY_* (no flags) */
    uint16_t rsvd;
    uint32_t new_stag;              /* out */
    uint32_t rsvd1;
};

struct rnic_cmd_cq {                /* CREATE_CQ, DESTROY_CQ */
    uint32_t cqn;                   /* out: CREATE_CQ; in: DESTROY_CQ */
    uint8_t  log_size;              /* in: log2(entries), 1..15, at most
                                     * max_cqe entries */
    uint8_t  msix_vector;           /* in: 1..RNIC_MSIX_VECTORS-1 */
    uint16_t rsvd;
    uint64_t ring_addr;             /* in: 4 KiB aligned, contiguous */
    uint32_t udb;                   /* in: doorbell page + 1, 0: none */
    uint32_t rsvd1;
};

#define RNIC_NO_SRQ                 0xffffffffu

struct rnic_cmd_qp {                /* CREATE_QP, DESTROY_QP */
    uint32_t qpn;                   /* out: CREATE_QP; in: DESTROY_QP */
    uint32_t pdn;                   /* in */
    uint32_t send_cqn;              /* in */
    uint32_t recv_cqn;              /* in */
    uint32_t srqn;                  /* in: or RNIC_NO_SRQ */
    uint8_t  sq_log_size;           /* in: 1..15, at most max_qp_wr */
    uint8_t  rq_log_size;           /* in: as sq_log_size; 0 with an SRQ */
    uint16_t flags;                 /* in: RNIC_QP_FLAG_* */
    uint64_t sq_addr;               /* in: send ring, 4 KiB aligned */
    uint64_t rq_addr;               /* in: receive ring, 0 with an SRQ */
    uint32_t udb;                   /* in: doorbell page + 1, 0: none */
    uint32_t rsvd;
};

/*
 * A kernel QP may post FAST_REG and use the physical STag.  The
 * device cannot tell who asked: the driver sets this only for QPs of
 * kernel consumers and never lets user space choose it.
 */
#define RNIC_QP_FLAG_KERNEL         (1u << 0)

enum rnic_qp_hw_state {
    RNIC_QPS_IDLE        = 0,
    RNIC_QPS_RTS         = 1,
    RNIC_QPS_CLOSING     = 2,
    RNIC_QPS_TERMINATE   = 3,
    RNIC_QPS_ERROR       = 4,
};

#define RNIC_MODIFY_STATE           (1u << 0)

struct rnic_cmd_modify_qp {         /* MODIFY_QP */
    uint32_t qpn;                   /* in */
    uint32_t mask;                  /* in: RNIC_MODIFY_*; 0: nothing */
    uint8_t  state;                 /* in: IDLE or ERROR (RTS comes from
                                     * CONNECT/ACCEPT) */
    uint8_t  rsvd[3];
};

struct rnic_cmd_query_qp {          /* QUERY_QP */
    uint32_t qpn;                   /* in */
    uint8_t  state;                 /* out: enum rnic_qp_hw_state */
    /* out: the QP's last Terminate, RNIC_QP_TERM_*; layer << 4 | error
     * type, and error code, as on the wire (RFC 5040 §4.8) */
    uint8_t  term_layer_etype;
    uint8_t  term_ecode;
    uint8_t  term_received;         /* out: RNIC_QP_TERM_* */
    uint16_t ird;                   /* out */
    uint16_t ord;                   /* out */
    uint32_t conn_id;               /* out: 0 when not connected */
    uint32_t sq_cons;               /* out: WQEs consumed, 16-bit count */
    uint32_t rq_cons;               /* out: as sq_cons */
};

#define RNIC_QP_TERM_NONE           0   /* none since CREATE_QP */
#define RNIC_QP_TERM_RECEIVED       1   /* the peer's */
#define RNIC_QP_TERM_SENT           2   /* ours */

struct rnic_cmd_srq {               /* CREATE_SRQ, DESTROY_SRQ */
    uint32_t srqn;                  /* out: CREATE_SRQ; in: DESTROY_SRQ */
    uint32_t pdn;                   /* in */
    uint8_t  log_size;              /* in */
    uint8_t  rsvd[3];
    uint32_t udb;                   /* in: doorbell page + 1, 0: none */
    uint64_t ring_addr;             /* in: 4 KiB aligned, contiguous */
};

/*
 * MODIFY_SRQ: arms the SRQ limit.  When a receive taken from the SRQ
 * leaves fewer than @limit receives posted, the device posts SRQ_LIMIT
 * once and disarms; 0 disarms (docs/spec.md "Commands").
 */
struct rnic_cmd_modify_srq {        /* MODIFY_SRQ */
    uint32_t srqn;                  /* in */
    uint32_t limit;                 /* in: 0..2^log_size */
};

#define RNIC_AF_INET        4
#define RNIC_AF_INET6       6

struct rnic_sockaddr {
    uint8_t  family;                /* RNIC_AF_INET or RNIC_AF_INET6 */
    uint8_t  rsvd;
    uint16_t port;                  /* host order of the device: LE */
    uint8_t  addr[16];              /* IPv4 in addr[0..3], network order */
};

struct rnic_cmd_listen {            /* LISTEN, UNLISTEN */
    uint32_t listener_id;           /* out: LISTEN; in: UNLISTEN; 1..16 */
    uint32_t backlog;               /* in: 1..128 (0 is taken as 1) */
    struct rnic_sockaddr local;     /* in; out: port, the one the host
                                     * chose when 0 was given */
};

/*
 * RFC 6581 peer-to-peer mode: RTR message types (docs/spec.md "Peer-to-peer
 * mode").  CONNECT's rtr: the types to offer; ACCEPT's: the types to take
 * if the peer asks.  Without RNIC_RTR_GIVEN the properties decide
 * (mpa-p2p, mpa-rtr); with it and no type, CONNECT offers no peer-to-peer
 * mode and ACCEPT refuses a peer that asks for it.
 */
#define RNIC_RTR_SEND               (1u << 0)   /* zero-length Send */
#define RNIC_RTR_WRITE              (1u << 1)   /* zero-length RDMA Write */
#define RNIC_RTR_READ               (1u << 2)   /* zero-length RDMA Read */
#define RNIC_RTR_TYPES              0x07u
#define RNIC_RTR_GIVEN              (1u << 7)   /* in: these, not mpa-rtr */
#define RNIC_RTR_P2P                (1u << 7)   /* out: peer-to-peer asked */

/* What CONNECT, ACCEPT and REJECT send in the MPA Request, Reply or Reject. */
struct rnic_conn_param {
    uint16_t ird;                   /* in: Reads we serve at once, 0..max_ird
                                     * (more is taken as max_ird) */
    uint16_t ord;                   /* in: Reads we issue at once, 0..max_ord
                                     * (more is taken as max_ord) */
    uint16_t pdata_len;             /* in: <= RNIC_MAX_PDATA */
    uint8_t  rtr;                   /* in: RNIC_RTR_* */
    uint8_t  rsvd;
    uint64_t pdata_addr;            /* in: MPA private data to send */
};

struct rnic_cmd_connect {           /* CONNECT */
    uint32_t qpn;                   /* in */
    uint32_t conn_id;               /* out */
    struct rnic_sockaddr peer;      /* in */
    uint32_t rsvd;
    struct rnic_conn_param param;   /* in */
    /* in: guest address of a struct rnic_sockaddr to bind before
     * connecting; 0: the host chooses */
    uint64_t local_addr;
};

struct rnic_cmd_accept {            /* ACCEPT, REJECT */
    uint32_t conn_id;               /* in */
    uint32_t qpn;                   /* in: ACCEPT; REJECT: 0 */
    struct rnic_conn_param param;   /* in; REJECT: pdata only */
};

#define RNIC_DISCONNECT_ABORT       (1u << 0)

struct rnic_cmd_disconnect {        /* DISCONNECT */
    uint32_t qpn;                   /* in */
    uint32_t flags;                 /* in: RNIC_DISCONNECT_* */
};

struct rnic_cmd_query_conn {        /* QUERY_CONN */
    uint32_t conn_id;               /* in */
    uint8_t  rtr;                   /* out: the RTR type agreed, 0: none */
    uint8_t  peer_rtr;              /* out: RNIC_RTR_P2P | types the peer
                                     * offered, if it asked (Request) */
    uint8_t  flags;                 /* out: RNIC_CONN_* */
    uint8_t  rsvd;
    uint64_t info_addr;             /* in: guest buffer for a struct
                                     * rnic_conn_info, RNIC_CONN_INFO_SIZE */
    /* in: the QP of a connection that ended in CONN_REJECTED; its peer's
     * Reject stays readable by conn_id until the QP's next CONNECT or
     * DESTROY_QP.  0: live connections only */
    uint32_t qpn;
    uint32_t rsvd1;
};

/* QUERY_CONN's flags: MPA markers as agreed, each direction (ABI 1.2). */
#define RNIC_CONN_MARKERS_TX        (1u << 0)   /* we insert them */
#define RNIC_CONN_MARKERS_RX        (1u << 1)   /* the peer inserts them */

/* RFC 5044 §7.1: private data in an MPA Request or Reply, at most. */
#define RNIC_MPA_PDATA_MAX          512
/*
 * Private data the guest may send with CONNECT, ACCEPT and REJECT (and
 * QUERY_DEVICE's max_pdata): RFC 6581's IRD/ORD take the first 4 octets
 * of the 512 (mpa-rev 2; one limit for both revisions).
 */
#define RNIC_MAX_PDATA              (RNIC_MPA_PDATA_MAX - 4)

struct rnic_conn_info {
    struct rnic_sockaddr local;
    struct rnic_sockaddr peer;
    uint16_t ird;                   /* peer's, from RFC 6581 private data */
    uint16_t ord;
    uint16_t pdata_len;
    uint8_t  mpa_rev;
    uint8_t  mpa_crc;               /* 1 when CRC32c is in use */
    uint8_t  pdata[RNIC_MPA_PDATA_MAX]; /* the peer's private data */
};

struct rnic_device_attr {
    uint32_t abi_version;           /* RNIC_VERSION_VALUE */
    uint32_t max_pd;
    uint32_t max_mr;                /* regions at once */
    uint32_t max_mw;
    uint32_t max_cq;
    uint32_t max_cqe;               /* entries per CQ */
    uint32_t max_qp;
    uint32_t max_qp_wr;             /* entries per send or receive queue */
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_sge;               /* RNIC_WQE_MAX_SGE */
    uint32_t max_ird;
    uint32_t max_ord;
    uint32_t max_pdata;             /* RNIC_MAX_PDATA */
    uint64_t max_mr_size;
    uint32_t page_size_cap;         /* bit n set: pages of 2^n bytes */
    uint32_t msix_vectors;
    uint32_t mpa_rev;               /* property mpa-rev */
    uint32_t flags;                 /* RNIC_DEV_* */
    uint64_t max_page_list_bytes;   /* property max-page-list-bytes */
    uint8_t  mpa_rtr;               /* property mpa-rtr: RNIC_RTR_* */
    uint8_t  mac[6];                /* property mac */
    uint8_t  rsvd0;
    uint32_t max_fast_reg_pages;    /* RNIC_FAST_REG_MAX_PAGES */
    uint32_t udb_pages;             /* doorbell pages in BAR 4 */
    uint8_t  rsvd[24];
};

#define RNIC_DEV_CRC_REQUIRED       (1u << 0)
#define RNIC_DEV_MARKERS            (1u << 1)
#define RNIC_DEV_STAG_ONE_SHOT      (1u << 2)   /* stag-default */
#define RNIC_DEV_MPA_P2P            (1u << 3)   /* mpa-p2p */

/* ---- Work queues (docs/spec.md "Work requests") ------------------------- */
#define RNIC_WQE_MAX_SGE        4

struct rnic_wqe_sge {
    uint64_t addr;                  /* tagged offset in the local STag */
    uint32_t length;
    uint32_t stag;                  /* local STag (lkey) */
};

enum rnic_wqe_opcode {
    RNIC_WQE_SEND            = 0x00,
    RNIC_WQE_SEND_INV        = 0x01,
    RNIC_WQE_WRITE           = 0x02,
    RNIC_WQE_READ            = 0x03,
    RNIC_WQE_ATOMIC_FADD     = 0x04,
    RNIC_WQE_ATOMIC_CSWAP    = 0x05,
    RNIC_WQE_IMM_DATA        = 0x06,
    RNIC_WQE_LOCAL_INV       = 0x07,
    RNIC_WQE_BIND_MW         = 0x08,
    RNIC_WQE_FAST_REG        = 0x09, /* kernel QPs only */
    RNIC_WQE_READ_INV        = 0x0a, /* Read, then invalidate the sink */
    RNIC_WQE_RECV            = 0x80, /* completions only */
};

#define RNIC_WQE_FLAG_SIGNALED   (1u << 0)   /* completion even on success */
#define RNIC_WQE_FLAG_SOLICITED  (1u << 1)   /* Send/Immediate with SE */
#define RNIC_WQE_FLAG_FENCE      (1u << 2)   /* wait: prior Reads, Atomics */
#define RNIC_WQE_FLAG_INLINE     (1u << 3)   /* payload in the sge area */
#define RNIC_WQE_INLINE_MAX      64

/*
 * FAST_REG, in the SGE area: registers the ALLOC_MR region named by
 * stag's index, with stag's key, from npages page addresses (u64 each) at
 * pbl_addr, read when the WR executes.
 */
struct rnic_wqe_fast_reg {
    uint64_t pbl_addr;              /* guest address of the page list */
    uint64_t iova;                  /* tagged offset of the first byte */
    uint64_t length;                /* bytes, at least 1 */
    uint32_t npages;                /* exactly the pages spanned, <= the
                                     * region's max_pages */
    uint32_t access;                /* RNIC_ACC_* (no MW_BIND) */
    uint32_t stag;                  /* the region's index, new key */
    uint32_t first_byte_offset;     /* of iova in page 0 */
    uint8_t  page_shift;            /* 12..21 */
    uint8_t  rsvd[7];
};

struct rnic_sq_wqe {
    uint64_t wr_id;
    uint8_t  opcode;                /* enum rnic_wqe_opcode */
    uint8_t  flags;                 /* RNIC_WQE_FLAG_* */
    uint8_t  num_sge;               /* INLINE: payload bytes (<= 64) */
    uint8_t  rsvd0;
    uint32_t imm_or_stag;           /* immediate; STag to invalidate */
    uint32_t remote_stag;           /* WRITE/READ/ATOMIC; MW for BIND_MW */
    uint32_t bind_access;           /* BIND_MW: RNIC_ACC_REMOTE_* (bits
                                     * 23:0) | new key << 24 */
    uint64_t remote_addr;           /* tagged offset at the peer */
    uint64_t atomic_arg0;           /* add value, or compare value */
    uint64_t atomic_arg1;           /* swap value */
    uint8_t  rsvd1[16];
    union {
        struct rnic_wqe_sge sge[RNIC_WQE_MAX_SGE]; /* BIND_MW: sge[0] = MR */
        struct rnic_wqe_fast_reg fr;               /* FAST_REG */
    };
};

struct rnic_rq_wqe {
    uint64_t wr_id;
    uint8_t  num_sge;
    uint8_t  rsvd0[3];
    uint32_t linked_stag;           /* invalidated when this buffer is used;
                                     * 0 = none */
    uint8_t  rsvd1[48];
    struct rnic_wqe_sge sge[RNIC_WQE_MAX_SGE];
};

/* ---- Completions (docs/spec.md "Completions") --------------------------- */
enum rnic_cqe_status {
    RNIC_CQE_SUCCESS         = 0x00,
    RNIC_CQE_LOC_LEN_ERR     = 0x01, /* receive buffer too small, SGE out of
                                      * bounds */
    RNIC_CQE_LOC_QP_OP_ERR   = 0x02, /* malformed WQE, or one the QP may
                                      * not run now */
    RNIC_CQE_LOC_PROT_ERR    = 0x03, /* local STag invalid or of another PD */
    RNIC_CQE_WR_FLUSH_ERR    = 0x04, /* QP left RTS before this WR ran */
    RNIC_CQE_MW_BIND_ERR     = 0x05,
    RNIC_CQE_LOC_ACCESS_ERR  = 0x06, /* local STag lacks the right, or DMA
                                      * to a local buffer failed */
    RNIC_CQE_REM_INV_REQ_ERR = 0x07, /* peer refused the request */
    RNIC_CQE_REM_ACCESS_ERR  = 0x08, /* peer's STag check failed */
    RNIC_CQE_REM_OP_ERR      = 0x09, /* peer reported an operation error */
    RNIC_CQE_BAD_RESP_ERR    = 0x0a, /* unexpected response */
    RNIC_CQE_FATAL_ERR       = 0x0b, /* reserved; 1.0 never reports it */
    RNIC_CQE_GENERAL_ERR     = 0x0c, /* anything else (traced) */
};

#define RNIC_CQE_FLAG_WITH_INV   (1u << 0)   /* invalidated_stag is valid */
#define RNIC_CQE_FLAG_WITH_IMM   (1u << 1)   /* imm is valid */
#define RNIC_CQE_FLAG_SOLICITED  (1u << 2)

struct rnic_cq_entry {
    uint64_t wr_id;
    uint32_t byte_len;
    uint32_t qpn;
    uint32_t imm;
    uint32_t invalidated_stag;
    uint8_t  status;                /* enum rnic_cqe_status */
    uint8_t  opcode;                /* enum rnic_wqe_opcode */
    uint8_t  flags;                 /* RNIC_CQE_FLAG_* */
    uint8_t  phase;                 /* bit 0: 1 on the 1st pass, 0 on the 2nd */
    uint32_t rsvd;
};

/* ---- Events (docs/spec.md "Events") ------------------------------------- */
enum rnic_event_type {
    RNIC_EV_CONN_REQUEST    = 0x01, /* id: conn; arg0: listener; arg1: pdata len */
    RNIC_EV_CONN_ESTABLISHED = 0x02, /* id: qpn; arg0: conn */
    RNIC_EV_CONN_REJECTED   = 0x03, /* id: qpn; arg0: conn; arg1: pdata len */
    RNIC_EV_CONN_ERROR      = 0x04, /* id: qpn; arg0: errno */
    RNIC_EV_CONN_CLOSED     = 0x05, /* id: qpn; arg0: 1 if abortive */
    RNIC_EV_QP_ERROR        = 0x06, /* id: qpn; arg0: 2 (LOC_QP_OP_ERR) */
    RNIC_EV_TERM_RECEIVED   = 0x07, /* id: qpn; arg0: layer << 8 | etype;
                                     * arg1: ecode */
    RNIC_EV_TERM_SENT       = 0x08, /* as TERM_RECEIVED */
    RNIC_EV_CQ_OVERFLOW     = 0x09, /* id: cqn */
    RNIC_EV_FATAL           = 0x0a, /* arg0: RNIC_CMD_ERR_DMA */
    RNIC_EV_SRQ_LIMIT       = 0x0b, /* id: srqn; arg0: receives left
                                     * (ABI 1.2) */
};

/* The listener id of connections handed in by the host. */
#define RNIC_LISTENER_HANDED_IN     0xffffffffu
/*
 * Connection ids are RNIC_CONN_ID_MIN or above, QP numbers below it, and
 * an id comes back only after 2^32 - 2^16 newer connections.
 */
#define RNIC_CONN_ID_MIN            0x10000u

struct rnic_event {
    uint8_t  type;                  /* enum rnic_event_type */
    uint8_t  rsvd[2];
    uint8_t  phase;                 /* as in struct rnic_cq_entry */
    uint32_t id;
    uint32_t arg0;
    uint32_t arg1;
    uint64_t timestamp_ns;          /* QEMU_CLOCK_VIRTUAL */
    uint64_t rsvd1;
};

/* ---- Names, for logs, traces and tools ---------------------------------- */
/* Initialisers of string arrays indexed by the value; gaps stay NULL. */
#define RNIC_CMD_STATUS_NAMES {                                             \
    [RNIC_CMD_OK] = "OK", [RNIC_CMD_ERR_OPCODE] = "ERR_OPCODE",             \
    [RNIC_CMD_ERR_PARAM] = "ERR_PARAM",                                     \
    [RNIC_CMD_ERR_RESOURCE] = "ERR_RESOURCE",                               \
    [RNIC_CMD_ERR_HANDLE] = "ERR_HANDLE", [RNIC_CMD_ERR_BUSY] = "ERR_BUSY", \
    [RNIC_CMD_ERR_STATE] = "ERR_STATE", [RNIC_CMD_ERR_DMA] = "ERR_DMA",     \
    [RNIC_CMD_ERR_ACCESS] = "ERR_ACCESS",                                   \
    [RNIC_CMD_ERR_DENIED] = "ERR_DENIED",                                   \
    [RNIC_CMD_ERR_ADDRINUSE] = "ERR_ADDRINUSE",                             \
}

#define RNIC_CQE_STATUS_NAMES {                                             \
    [RNIC_CQE_SUCCESS] = "SUCCESS", [RNIC_CQE_LOC_LEN_ERR] = "LOC_LEN_ERR", \
    [RNIC_CQE_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",                             \
    [RNIC_CQE_LOC_PROT_ERR] = "LOC_PROT_ERR",                               \
    [RNIC_CQE_WR_FLUSH_ERR] = "WR_FLUSH_ERR",                               \
    [RNIC_CQE_MW_BIND_ERR] = "MW_BIND_ERR",                                 \
    [RNIC_CQE_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",                           \
    [RNIC_CQE_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",                         \
    [RNIC_CQE_REM_ACCESS_ERR] = "REM_ACCESS_ERR",                           \
    [RNIC_CQE_REM_OP_ERR] = "REM_OP_ERR",                                   \
    [RNIC_CQE_BAD_RESP_ERR] = "BAD_RESP_ERR",                               \
    [RNIC_CQE_FATAL_ERR] = "FATAL_ERR",                                     \
    [RNIC_CQE_GENERAL_ERR] = "GENERAL_ERR",                                 \
}

#define RNIC_EVENT_NAMES {                                                  \
    [RNIC_EV_CONN_REQUEST] = "CONN_REQUEST",                                \
    [RNIC_EV_CONN_ESTABLISHED] = "CONN_ESTABLISHED",                        \
    [RNIC_EV_CONN_REJECTED] = "CONN_REJECTED",                              \
    [RNIC_EV_CONN_ERROR] = "CONN_ERROR",                                    \
    [RNIC_EV_CONN_CLOSED] = "CONN_CLOSED",                                  \
    [RNIC_EV_QP_ERROR] = "QP_ERROR",                                        \
    [RNIC_EV_TERM_RECEIVED] = "TERM_RECEIVED",                              \
    [RNIC_EV_TERM_SENT] = "TERM_SENT",                                      \
    [RNIC_EV_CQ_OVERFLOW] = "CQ_OVERFLOW",                                  \
    [RNIC_EV_FATAL] = "FATAL",                                              \
    [RNIC_EV_SRQ_LIMIT] = "SRQ_LIMIT",                                      \
}

/* ---- Sizes, checked where the compiler allows it ------------------------ */
#define RNIC_DEVICE_ATTR_SIZE   128
#define RNIC_CONN_INFO_SIZE     (2 * 20 + 8 + RNIC_MPA_PDATA_MAX)
#define RNIC_SQ_WQE_SIZE        128
#define RNIC_RQ_WQE_SIZE        128
#define RNIC_CQE_SIZE           32
#define RNIC_EVENT_SIZE         32

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
_Static_assert(sizeof(struct rnic_cmd) == RNIC_CMD_SIZE, "cmd");
_Static_assert(sizeof(struct rnic_wqe_fast_reg) <=
               RNIC_WQE_MAX_SGE * sizeof(struct rnic_wqe_sge), "fast_reg");
_Static_assert(sizeof(struct rnic_device_attr) == RNIC_DEVICE_ATTR_SIZE, "attr");
_Static_assert(sizeof(struct rnic_conn_info) == RNIC_CONN_INFO_SIZE, "info");
_Static_assert(sizeof(struct rnic_sq_wqe) == RNIC_SQ_WQE_SIZE, "sq wqe");
_Static_assert(sizeof(struct rnic_rq_wqe) == RNIC_RQ_WQE_SIZE, "rq wqe");
_Static_assert(sizeof(struct rnic_cq_entry) == RNIC_CQE_SIZE, "cqe");
_Static_assert(sizeof(struct rnic_event) == RNIC_EVENT_SIZE, "event");
#endif

#endif /* RNIC_ABI_H */
