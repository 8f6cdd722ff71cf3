/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest of what bounds a hostile guest: each table limit on its own, the
 * page-list memory cap, the range of every max-* property at realize, and
 * a command queue that cannot hold QEMU's main loop: a guest may use the
 * device only as far as it was given, and never stall the host.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "libqos/rnic-peer.h"

#define BIG_PAGES   (1u << 20)      /* a 4 GiB region of 4 KiB pages */

/* REG_MR of @npages 4 KiB pages whose list is at @pbl (IOVA 0). */
static struct rnic_cmd_reg_mr reg_mr_args(uint32_t pdn, uint64_t pbl,
                                          uint32_t npages, uint8_t key)
{
    return (struct rnic_cmd_reg_mr) {
        .pdn = cpu_to_le32(pdn),
        .access = cpu_to_le32(RNIC_ACC_LOCAL_WRITE),
        .length = cpu_to_le64(npages == BIG_PAGES ? UINT32_MAX :
                              (uint64_t)npages * 4096),
        .pbl_addr = cpu_to_le64(pbl),
        .npages = cpu_to_le32(npages),
        .page_shift = 12,
        .key = key,
        .policy = RNIC_MR_POLICY_PERSISTENT,
    };
}

/* max-mrs and max-mws are two limits, not one shared table. */
static void test_mr_mw_separate(void)
{
    QRnic t;
    uint64_t buf;
    uint32_t pdn, stag;
    struct rnic_cmd_alloc_mw mw;

    qrnic_test_start(&t, ",max-mrs=4,max-mws=2");
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    buf = guest_alloc(t.alloc, 4096);
    for (int i = 0; i < 4; i++) {
        g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, 4096, RNIC_ACC_LOCAL_WRITE,
                                     i, &stag), ==, RNIC_CMD_OK);
    }
    g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, 4096, RNIC_ACC_LOCAL_WRITE,
                                 9, &stag), ==, RNIC_CMD_ERR_RESOURCE);
    mw = (struct rnic_cmd_alloc_mw) { .pdn = cpu_to_le32(pdn), .type = 1 };
    for (int i = 0; i < 2; i++) {
        mw.key = i;
        g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_ALLOC_MW, &mw,
                                         sizeof(mw)), ==, RNIC_CMD_OK);
    }
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_ALLOC_MW, &mw, sizeof(mw)),
                    ==, RNIC_CMD_ERR_RESOURCE);
    qrnic_test_stop(&t);
}

/*
 * Page lists are capped per device and reported by QUERY_DEVICE; a list
 * of 2^20 pages past the cap is refused before it is read (its address
 * is not even guest RAM), and lists stop being accepted at the cap.
 */
static void test_page_list_cap(void)
{
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    struct rnic_cmd_reg_mr r;
    uint64_t pbl, attr_addr;
    uint32_t pdn;
    uint16_t st = RNIC_CMD_OK;
    int n;
    QRnic t;

    qrnic_test_start(&t, ",max-page-list-bytes=4096");
    qrnic_test_enable(&t);
    attr_addr = guest_alloc(t.alloc, sizeof(attr));
    q = (struct rnic_cmd_query_device) { .attr_addr = cpu_to_le64(attr_addr) };
    qrnic_cmd_ok(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    qtest_memread(t.qts, attr_addr, &attr, sizeof(attr));
    g_assert_cmpuint(le64_to_cpu(attr.max_page_list_bytes), ==, 4096);

    pdn = qrnic_create_pd(&t);
    r = reg_mr_args(pdn, 0xfee00000ull, BIG_PAGES, 1);   /* not RAM */
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_REG_MR, &r, sizeof(r)), ==,
                    RNIC_CMD_ERR_RESOURCE);
    /* Two pages that are not contiguous: a list each, until the cap. */
    pbl = guest_alloc(t.alloc, 16);
    qtest_writeq(t.qts, pbl, 0x100000);
    qtest_writeq(t.qts, pbl + 8, 0x300000);
    for (n = 0; n < 300 && st == RNIC_CMD_OK; n++) {
        r = reg_mr_args(pdn, pbl, 2, n);
        st = qrnic_cmd_status(&t, RNIC_CMD_REG_MR, &r, sizeof(r));
    }
    g_assert_cmphex(st, ==, RNIC_CMD_ERR_RESOURCE);
    g_assert_cmpint(n, >, 1);
    g_assert_cmpint(n, <=, 4096 / 16 + 1);
    qrnic_test_stop(&t);
}

/* Starts QEMU with "-device rnic<extra>" and returns what it printed. */
static char *realize_error(const char *extra)
{
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    g_autofree char *dev = g_strdup_printf("rnic%s", extra);
    const char *argv[] = {
        qemu, "-M", "q35", "-accel", "qtest", "-nodefaults", "-display",
        "none", "-device", dev, NULL,
    };
    g_autofree char *out = NULL;
    char *err = NULL;
    int status;

    g_assert_nonnull(qemu);
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL,
                               G_SPAWN_STDIN_FROM_DEV_NULL, NULL, NULL, &out,
                               &err, &status, NULL));
    g_assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return err;
}

/* Every max-* property is range-checked at realize, with a clear error. */
static void test_realize_ranges(void)
{
    static const struct {
        const char *extra, *says;
    } bad[] = {
        { ",max-cqes=65536", "max-cqes=65536 is out of range (2..32768)" },
        { ",max-qp-wrs=65536", "max-qp-wrs=65536 is out of range" },
        { ",max-srq-wrs=1", "max-srq-wrs=1 is out of range" },
        { ",max-mrs=0", "max-mrs=0 is out of range" },
        { ",max-pds=0", "max-pds=0 is out of range" },
        { ",max-page-list-bytes=0", "max-page-list-bytes=0 is out of range" },
        { ",max-mrs=16000000,max-mws=1000000", "more STags than there are" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *err = realize_error(bad[i].extra);

        g_assert_nonnull(strstr(err, bad[i].says));
    }
}

/*
 * A guest floods the command queue with REG_MRs of 2^20 pages (8 MiB of
 * page list each).  The device runs them a budget at a time, so the
 * monitor is answered while the flood is still going: once the first
 * command is done, query-status comes back before the last one is.
 * Only the order is asserted; the time is printed.  On the main loop
 * (main-loop=on), which the monitor shares: on an IOThread the monitor
 * never waits for the device at all.
 */
static void test_cmdq_yields(void)
{
    const uint32_t cmds = 1u << QRNIC_CMDQ_LOG;
    g_autofree char *extra = g_strdup_printf(",main-loop=on,"
                                             "max-page-list-bytes=%llu",
                                             (unsigned long long)cmds * 9 *
                                             1024 * 1024);
    struct rnic_cmd_reg_mr r;
    uint64_t pbl;
    uint32_t pdn, cons;
    gint64 t0, dt;
    QDict *resp;
    QRnic t;

    qrnic_test_start(&t, extra);
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    pbl = guest_alloc(t.alloc, BIG_PAGES * 8);  /* zero: page 0, each */
    for (uint32_t i = 0; i < cmds; i++) {
        r = reg_mr_args(pdn, pbl, BIG_PAGES, i);
        qrnic_cmd_queue(&t, RNIC_CMD_REG_MR, &r, sizeof(r));
    }
    qrnic_wr(&t, RNIC_REG_CMDQ_PROD, t.cmd_prod);
    while (qrnic_rd(&t, RNIC_REG_CMDQ_CONS) == t.cmd_prod - cmds) {
        g_usleep(100);
    }
    t0 = g_get_monotonic_time();
    resp = qtest_qmp(t.qts, "{'execute': 'query-status'}");
    dt = g_get_monotonic_time() - t0;
    cons = qrnic_rd(&t, RNIC_REG_CMDQ_CONS);
    g_assert_true(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    g_test_message("query-status answered in %" PRId64 " us during a flood "
                   "of %u REG_MRs of 2^20 pages; %u of them done then",
                   dt, cmds, cons - (t.cmd_prod - cmds));
    g_assert_cmpuint(cons, !=, t.cmd_prod);
    while (qrnic_rd(&t, RNIC_REG_CMDQ_CONS) != t.cmd_prod) {
        g_usleep(1000);
    }
    qrnic_test_stop(&t);
}

/*
 * A guest rings send doorbells for 8 full rings of 32768 entries: the
 * work-queue bottom half takes them a budget at a time, so the monitor
 * and the command queue are served while most are still waiting.  Only
 * the order is asserted (QUERY_QP after query-status sees a ring not yet
 * fully taken); the time is printed.  On the main loop, as above.
 */
static void test_wq_yields(void)
{
    enum { NQP = 8, LOG = 15 };
    struct rnic_cmd_qp c;
    struct rnic_cmd_query_qp q;
    struct rnic_cmd cmd;
    uint32_t pdn, cqn, qpn[NQP], cons;
    uint64_t cq_ring;
    gint64 t0, dt;
    QDict *resp;
    QRnic t;

    qrnic_test_start(&t, ",main-loop=on,max-qp-wrs=32768");
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    cqn = qrnic_create_cq(&t, 3, 1, &cq_ring);
    for (int i = 0; i < NQP; i++) {
        c = (struct rnic_cmd_qp) {
            .pdn = cpu_to_le32(pdn),
            .send_cqn = cpu_to_le32(cqn),
            .recv_cqn = cpu_to_le32(cqn),
            .srqn = cpu_to_le32(RNIC_NO_SRQ),
            /* zeroed entries: each a Send of nothing, still fetched */
            .sq_addr = cpu_to_le64(guest_alloc(t.alloc,
                                               RNIC_SQ_WQE_SIZE << LOG)),
            .rq_addr = cpu_to_le64(guest_alloc(t.alloc, 4096)),
            .sq_log_size = LOG,
            .rq_log_size = 1,
        };
        cmd = qrnic_cmd_ok(&t, RNIC_CMD_CREATE_QP, &c, sizeof(c));
        qpn[i] = le32_to_cpu(((struct rnic_cmd_qp *)cmd.u.raw)->qpn);
    }
    for (int i = 0; i < NQP; i++) {
        qrnic_wr(&t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(qpn[i], 1u << LOG));
    }
    t0 = g_get_monotonic_time();
    resp = qtest_qmp(t.qts, "{'execute': 'query-status'}");
    dt = g_get_monotonic_time() - t0;
    g_assert_true(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    q = (struct rnic_cmd_query_qp) { .qpn = cpu_to_le32(qpn[NQP - 1]) };
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_QUERY_QP, &q, sizeof(q));
    cons = le32_to_cpu(((struct rnic_cmd_query_qp *)cmd.u.raw)->sq_cons);
    g_test_message("query-status answered in %" PRId64 " us while %u send "
                   "queue entries were rung; the last QP's ring then had "
                   "%u of %u taken", dt, NQP << LOG, cons, 1u << LOG);
    g_assert_cmpuint(cons, <, 1u << LOG);
    qrnic_test_stop(&t);
}

/* The largest "octets sent" of the device's rnic_wq_run traces in @log. */
static uint64_t max_wq_run_tx(const char *log, uint64_t *total)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    uint64_t most = 0;

    g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    *total = 0;
    for (char **l = lines; *l; l++) {
        const char *p = strstr(*l, "rnic_wq_run ");
        unsigned qps, wqes;
        uint64_t tx;

        if (p && sscanf(p, "rnic_wq_run %u QPs served, %u WQEs taken, %"
                        SCNu64, &qps, &wqes, &tx) == 3) {
            most = MAX(most, tx);
            *total += tx;
        }
    }
    return most;
}

/*
 * One run of the work-queue bottom half sends at most 2 MiB however many
 * QPs the guest rings: here one MMIO write rings 8 QPs' doorbell pages at
 * once, each with a 1 MiB Write to a peer that does not read yet.  Before,
 * each QP sent its own 1 MiB in the same run.
 */
static void test_wq_run_tx_bound(void)
{
    enum { NQP = 8, LEN = 1 << 20, PAGE = RNIC_UDB_PAGE_SIZE };
    g_autofree char *log = g_strdup_printf("%s/rnic-wq-run-%d.log",
                                           g_get_tmp_dir(), getpid());
    g_autofree char *extra = g_strdup_printf(
        ",udb-pages=%d,listen-allow=127.0.0.1 -trace rnic_wq_run -D %s",
        NQP, log);
    g_autofree uint8_t *pages = g_malloc0((NQP - 1) * PAGE + 4);
    struct rnic_cmd_listen l = { .local = { .family = RNIC_AF_INET,
                                            .addr = { 127, 0, 0, 1 } },
                                 .backlog = NQP };
    QRnicQp qp[NQP];
    uint32_t pdn, cqn, stag;
    uint64_t cq_ring, buf, most, total;
    struct rnic_cmd cmd;
    uint16_t port;
    int fds[NQP];
    QRnic t;

    if (getenv("RNIC_QTEST_CAPTURE")) {
        /* its -device options would follow this test's -D */
        g_test_skip("reads its own trace log; the capture run adds to it");
        return;
    }
    qrnic_test_start(&t, extra);
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    cqn = qrnic_create_cq(&t, 5, 1, &cq_ring);
    buf = guest_alloc(t.alloc, LEN);
    g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, LEN, RNIC_ACC_LOCAL_WRITE, 1,
                                 &stag), ==, RNIC_CMD_OK);
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_LISTEN, &l, sizeof(l));
    port = le16_to_cpu(((struct rnic_cmd_listen *)cmd.u.raw)->local.port);
    for (int i = 0; i < NQP; i++) {
        struct rnic_sq_wqe w = {
            .wr_id = cpu_to_le64(i),
            .opcode = RNIC_WQE_WRITE,
            .num_sge = 1,
            .remote_stag = cpu_to_le32(0x100),
            .sge[0] = qrnic_sge(stag, QRNIC_MR_IOVA, LEN),
        };
        QRnicPeer wire;

        t.udb = i + 1;
        g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp[i]), ==,
                        RNIC_CMD_OK);
        qrnic_peer_init(&wire, qrnic_tcp_connect(port, 0), false);
        qrnic_peer_accept(&wire, &t, qp[i].qpn, false);
        fds[i] = wire.fd;
        qtest_memwrite(t.qts, qp[i].sq, &w, sizeof(w));
        stl_le_p(pages + i * PAGE, RNIC_DB_VALUE(qp[i].qpn, 1));
    }
    /* Every doorbell in one write: page i's DB_SQ rings QP i. */
    qrnic_udb_rd(&t, 0, RNIC_REG_DB_SQ);        /* maps BAR 4 */
    qtest_memwrite(t.qts, t.udb_bar.addr + RNIC_REG_DB_SQ, pages,
                   (NQP - 1) * PAGE + 4);
    /*
     * What a run cannot send waits for the sockets' write handlers, in
     * real time: poll the trace until 2 MiB have gone.
     */
    for (int tries = 0; tries < 1000; tries++) {
        qrnic_settle(&t);
        most = max_wq_run_tx(log, &total);
        if (total >= 2 * LEN) {
            break;
        }
        g_usleep(10 * 1000);
    }
    qrnic_test_stop(&t);
    g_test_message("largest run sent %" PRIu64 " octets; all runs %" PRIu64,
                   most, total);
    g_assert_cmpuint(total, >=, 2 * LEN);
    g_assert_cmpuint(most, <=, 2 * LEN + 64 * 1024);  /* + one FPDU */
    unlink(log);
    for (int i = 0; i < NQP; i++) {
        close(fds[i]);
    }
}

/*
 * The private-data limit QUERY_DEVICE reports is the one CONNECT honours:
 * exactly max_pdata octets go, one more is refused.
 */
static void test_pdata_limit(void)
{
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    struct rnic_cmd_connect c;
    uint64_t attr_addr, pdata, cq_ring;
    uint32_t pdn, cqn, max;
    QRnicQp qp;
    QRnic t;

    qrnic_test_start(&t, ",peer-allow=127.0.0.1:9");
    qrnic_test_enable(&t);
    attr_addr = guest_alloc(t.alloc, sizeof(attr));
    q = (struct rnic_cmd_query_device) { .attr_addr = cpu_to_le64(attr_addr) };
    qrnic_cmd_ok(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    qtest_memread(t.qts, attr_addr, &attr, sizeof(attr));
    max = le32_to_cpu(attr.max_pdata);
    g_assert_cmpuint(max, ==, RNIC_MAX_PDATA);
    pdn = qrnic_create_pd(&t);
    cqn = qrnic_create_cq(&t, 3, 1, &cq_ring);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    pdata = guest_alloc(t.alloc, max + 1);
    c = (struct rnic_cmd_connect) {
        .qpn = cpu_to_le32(qp.qpn),
        .peer = { .family = RNIC_AF_INET, .addr = { 127, 0, 0, 1 },
                  .port = cpu_to_le16(9) },
        .param = {
            .ird = cpu_to_le16(1), .ord = cpu_to_le16(1),
            .pdata_len = cpu_to_le16(max + 1),
            .pdata_addr = cpu_to_le64(pdata),
        },
    };
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CONNECT, &c, sizeof(c)), ==,
                    RNIC_CMD_ERR_PARAM);
    c.param.pdata_len = cpu_to_le16(max);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CONNECT, &c, sizeof(c)), ==,
                    RNIC_CMD_OK);
    qrnic_test_stop(&t);
}

/*
 * A device at the top of max-qps still accepts: the connections it did
 * not ask for have as many slots as its QPs (once, at max-qps 65535,
 * the 16-bit slot index left them none and every listener refused).
 */
static void test_max_qps_accepts(void)
{
    QRnic a, b;
    uint64_t ring_a, ring_b;
    uint32_t cq_a, cq_b;
    QRnicQp qa, qb;

    qrnic_test_start_pair(&a, &b, ",max-qps=65535,listen-allow=127.0.0.1",
                          ",peer-allow=127.0.0.1");
    qrnic_test_enable(&a);
    qrnic_test_enable(&b);
    cq_a = qrnic_create_cq(&a, 3, 1, &ring_a);
    cq_b = qrnic_create_cq(&b, 3, 1, &ring_b);
    g_assert_cmphex(qrnic_try_create_qp(&a, qrnic_create_pd(&a), cq_a, cq_a, 3,
                                        &qa), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_try_create_qp(&b, qrnic_create_pd(&b), cq_b, cq_b, 3,
                                        &qb), ==, RNIC_CMD_OK);
    qrnic_connect_qps(&a, qa.qpn, &b, qb.qpn, 1);
    g_assert_cmpuint(qrnic_query_qp_state(&a, qa.qpn), ==, RNIC_QPS_RTS);
    qrnic_test_stop(&b);
    qrnic_test_stop(&a);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/limits/mr-mw-separate", test_mr_mw_separate);
    qtest_add_func("/rnic/limits/page-list-cap", test_page_list_cap);
    qtest_add_func("/rnic/limits/realize-ranges", test_realize_ranges);
    qtest_add_func("/rnic/limits/cmdq-yields", test_cmdq_yields);
    qtest_add_func("/rnic/limits/wq-yields", test_wq_yields);
    qtest_add_func("/rnic/limits/wq-run-tx-bound", test_wq_run_tx_bound);
    qtest_add_func("/rnic/limits/pdata", test_pdata_limit);
    qtest_add_func("/rnic/limits/max-qps-accepts", test_max_qps_accepts);
    return g_test_run();
}
