/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for migration (docs/spec.md "Migration"): the VM moves to a second
 * QEMU process through `migrate file:` and `-incoming file:`, with the
 * device's tables and queues populated.  The "state" dump must be the
 * same on both sides, the device must go on from where it was, and a
 * connected QP must come out as a link failure leaves it.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qobject/qlist.h"
#include "libqos/rnic.h"

#define MIG_ALLOW ",listen-allow=127.0.0.1,peer-allow=127.0.0.1"
#define MIG_RESET ",migrate-connections=reset"

/* The device's "state" property as JSON text. */
static char *mig_state(QRnic *t, const char *id)
{
    QDict *rsp = qtest_qmp(t->qts, "{'execute': 'qom-get', 'arguments':"
                           " {'path': %s, 'property': 'state'}}", id);
    GString *json;

    g_assert(qdict_haskey(rsp, "return"));
    json = qobject_to_json(qdict_get(rsp, "return"));
    qobject_unref(rsp);
    return g_string_free(json, false);
}

/* The receives the device's one SRQ holds, as "state" shows them. */
static int64_t mig_srq_posted(QRnic *t, const char *id)
{
    QDict *rsp = qtest_qmp(t->qts, "{'execute': 'qom-get', 'arguments':"
                           " {'path': %s, 'property': 'state'}}", id);
    QList *srqs = qdict_get_qlist(qdict_get_qdict(rsp, "return"), "srqs");
    int64_t n = qdict_get_int(qobject_to(QDict, qlist_peek(srqs)), "posted");

    qobject_unref(rsp);
    return n;
}

static struct rnic_rq_wqe mig_recv(uint64_t wr_id, uint32_t stag,
                                   uint64_t addr)
{
    struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(wr_id), .num_sge = 1 };

    w.sge[0] = qrnic_sge(stag, addr, 256);
    return w;
}

/*
 * Every kind of object, with holes where objects were destroyed (the
 * numbers handed out next depend on them), work posted, a QP number in
 * timewait and a listener.
 */
static void test_migrate_objects(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 4 };
    struct rnic_cmd_cq dcq;
    struct rnic_cmd_qp dqp;
    g_autofree char *before = NULL, *after = NULL;
    uint32_t pdn, mr, fast, cq1, cq2, cq3, srqn;
    uint64_t buf, ring1, ring2, ring3;
    QRnicQp qp1, qp2, qp3, srq;
    struct rnic_cmd cmd;
    uint16_t port;
    QRnic t;
    int fd;

    qrnic_test_start(&t, ",id=r" MIG_ALLOW);
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    qrnic_create_pd(&t);
    buf = guest_alloc(t.alloc, 4 * 4096);
    g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, 4 * 4096, RNIC_ACC_LOCAL_WRITE |
                                 RNIC_ACC_REMOTE_WRITE, 0x21, &mr), ==,
                    RNIC_CMD_OK);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 8, 0x33, 0, &fast), ==,
                    RNIC_CMD_OK);
    cq1 = qrnic_create_cq(&t, 4, 1, &ring1);
    cq2 = qrnic_create_cq(&t, 4, 2, &ring2);
    cq3 = qrnic_create_cq(&t, 5, 3, &ring3);
    dcq = (struct rnic_cmd_cq) { .cqn = cpu_to_le32(cq2) };
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_CQ, &dcq, sizeof(dcq));
    srqn = qrnic_create_srq(&t, pdn, &srq);
    qrnic_post_srq(&t, &srq, &(struct rnic_rq_wqe) { .wr_id = 7 });
    qrnic_post_srq(&t, &srq, &(struct rnic_rq_wqe) { .wr_id = 8 });
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cq1, cq3, 3, &qp1), ==,
                    RNIC_CMD_OK);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cq1, cq1, 3, &qp2), ==,
                    RNIC_CMD_OK);
    g_assert_cmphex(qrnic_try_create_qp_srq(&t, pdn, cq3, cq3, srqn, 3, &qp3),
                    ==, RNIC_CMD_OK);
    for (int i = 0; i < 3; i++) {
        struct rnic_rq_wqe w = mig_recv(0x100 + i, mr, buf + 256 * i);

        qrnic_post_recv(&t, &qp1, &w);
    }
    dqp = (struct rnic_cmd_qp) { .qpn = cpu_to_le32(qp2.qpn) };
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dqp, sizeof(dqp));
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_LISTEN, &l, sizeof(l));
    port = le16_to_cpu(((struct rnic_cmd_listen *)cmd.u.raw)->local.port);
    qrnic_settle(&t);
    before = mig_state(&t, "r");

    qrnic_test_migrate(&t, NULL);
    after = mig_state(&t, "r");
    g_assert_cmpstr(after, ==, before);

    /* It goes on: references, holes and the listener's port are kept. */
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_CQ, &dcq,
                                     sizeof(dcq)), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_cq(&t, 4, 2, &ring2), ==, cq2);
    dcq.cqn = cpu_to_le32(cq3);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_CQ, &dcq,
                                     sizeof(dcq)), ==, RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_query_qp_state(&t, qp1.qpn), ==, RNIC_QPS_IDLE);
    qrnic_post_srq(&t, &srq, &(struct rnic_rq_wqe) { .wr_id = 9 });
    qrnic_settle(&t);
    g_assert_cmpuint(mig_srq_posted(&t, "r"), ==, 3);
    fd = qrnic_tcp_connect(port, 0);
    close(fd);
    dqp.qpn = cpu_to_le32(qp1.qpn);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dqp, sizeof(dqp));
    qrnic_test_stop(&t);
}

/*
 * Two devices connected to each other move together, connections cut
 * (migrate-connections=reset): each QP ends in ERROR with its receives
 * flushed and the guest hears CONN_CLOSED (abortive), as after a link
 * failure.  (rnic-dp-test moves a connection with its socket.)
 */
static void test_migrate_connected_reset(void)
{
    uint32_t pa, pb, ca, cb, mra, cons = 0;
    uint64_t tx;
    uint64_t ra, rb, bufa;
    struct rnic_cq_entry e;
    struct rnic_event ev;
    QRnicQp qa, qb;
    QRnic a, b;
    struct rnic_rq_wqe w;

    qrnic_test_start_pair(&a, &b, MIG_ALLOW MIG_RESET, MIG_ALLOW MIG_RESET);
    qrnic_test_enable(&a);
    qrnic_test_enable(&b);
    pa = qrnic_create_pd(&a);
    pb = qrnic_create_pd(&b);
    ca = qrnic_create_cq(&a, 4, 1, &ra);
    cb = qrnic_create_cq(&b, 4, 1, &rb);
    g_assert_cmphex(qrnic_try_create_qp(&a, pa, ca, ca, 3, &qa), ==,
                    RNIC_CMD_OK);
    g_assert_cmphex(qrnic_try_create_qp(&b, pb, cb, cb, 3, &qb), ==,
                    RNIC_CMD_OK);
    bufa = guest_alloc(a.alloc, 4096);
    g_assert_cmphex(qrnic_reg_mr(&a, pa, bufa, 4096, RNIC_ACC_LOCAL_WRITE,
                                 0x11, &mra), ==, RNIC_CMD_OK);
    w = mig_recv(0xabb, mra, bufa);
    qrnic_post_recv(&a, &qa, &w);
    w = mig_recv(0xabc, mra, bufa);
    qrnic_post_recv(&a, &qa, &w);
    qrnic_connect_qps(&a, qa.qpn, &b, qb.qpn, 1);
    /* a zero-length Send from b takes the first receive */
    qrnic_post_send(&b, &qb, &(struct rnic_sq_wqe) {
                        .wr_id = cpu_to_le64(0xb1), .opcode = RNIC_WQE_SEND });
    qrnic_wait_cqe(&a, ra, 4, ca, &cons, &e);
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0xabb);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
    tx = qrnic_qom_int(&b, "b", "stat-tx-bytes");
    g_assert_cmpuint(tx, >, 0);

    qrnic_test_migrate(&a, &b);
    /* the counters move; the cut connection sends nothing more */
    g_assert_cmpuint(qrnic_qom_int(&b, "b", "stat-tx-bytes"), ==, tx);
    qrnic_expect_event(&a, RNIC_EV_CONN_CLOSED, &ev);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qa.qpn);
    qrnic_expect_event(&b, RNIC_EV_CONN_CLOSED, &ev);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qb.qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&a, qa.qpn), ==, RNIC_QPS_ERROR);
    g_assert_cmpuint(qrnic_query_qp_state(&b, qb.qpn), ==, RNIC_QPS_ERROR);
    qrnic_wait_cqe(&a, ra, 4, ca, &cons, &e);
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0xabc);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
    /* and connects again */
    qrnic_modify_qp_state(&a, qa.qpn, RNIC_QPS_IDLE, RNIC_CMD_OK);
    qrnic_modify_qp_state(&b, qb.qpn, RNIC_QPS_IDLE, RNIC_CMD_OK);
    qrnic_connect_qps(&a, qa.qpn, &b, qb.qpn, 1);
    qrnic_test_stop(&b);
    qrnic_test_stop(&a);
}

/*
 * A qcow2 image made through QMP (QEMU's tests have no qemu-img): savevm
 * keeps the VM's state in it.
 */
static void mig_snapshot_disk(QTestState *qts, const char *path)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    qtest_qmp_assert_success(qts, "{'execute': 'blockdev-add', 'arguments':"
                             " {'driver': 'file', 'node-name': 'f0',"
                             " 'filename': %s}}", path);
    qtest_qmp_assert_success(qts, "{'execute': 'blockdev-create', 'arguments':"
                             " {'job-id': 'mk', 'options': {'driver': 'qcow2',"
                             " 'file': 'f0', 'size': 1048576}}}");
    qtest_qmp_eventwait(qts, "JOB_STATUS_CHANGE");
    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{'execute': 'query-jobs'}");
        QList *jobs = qdict_get_qlist(rsp, "return");
        QDict *job = qobject_to(QDict, qlist_peek(jobs));
        bool done = !strcmp(qdict_get_str(job, "status"), "concluded");

        qobject_unref(rsp);
        if (done) {
            break;
        }
        g_usleep(10 * 1000);
    }
    qtest_qmp_assert_success(qts, "{'execute': 'job-dismiss', 'arguments':"
                             " {'id': 'mk'}}");
    qtest_qmp_assert_success(qts, "{'execute': 'blockdev-add', 'arguments':"
                             " {'driver': 'qcow2', 'node-name': 'd0',"
                             " 'file': 'f0'}}");
}

/*
 * savevm, then the device changes (objects destroyed and made, a listener
 * closed), then loadvm in the same QEMU: the device is as it was saved,
 * its listener bound again, and it goes on.
 */
static void test_migrate_savevm(void)
{
    g_autofree char *disk = g_strdup_printf("%s/rnic-savevm-%d.qcow2",
                                            g_get_tmp_dir(), getpid());
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 2 };
    g_autofree char *saved = NULL, *changed = NULL, *loaded = NULL;
    struct rnic_cmd_qp dqp;
    struct rnic_cmd cmd;
    uint32_t pdn, cqn;
    uint64_t ring;
    QRnicQp qp;
    char *out;
    QRnic t;

    qrnic_test_start(&t, ",id=r" MIG_ALLOW);
    qrnic_test_enable(&t);
    mig_snapshot_disk(t.qts, disk);
    pdn = qrnic_create_pd(&t);
    cqn = qrnic_create_cq(&t, 4, 1, &ring);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_LISTEN, &l, sizeof(l));
    l.listener_id = ((struct rnic_cmd_listen *)cmd.u.raw)->listener_id;
    qrnic_settle(&t);
    saved = mig_state(&t, "r");
    out = qtest_hmp(t.qts, "savevm snap");
    g_assert_cmpstr(out, ==, "");
    g_free(out);

    dqp = (struct rnic_cmd_qp) { .qpn = cpu_to_le32(qp.qpn) };
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dqp, sizeof(dqp));
    qrnic_create_pd(&t);
    qrnic_cmd_ok(&t, RNIC_CMD_UNLISTEN, &l, sizeof(l));
    changed = mig_state(&t, "r");
    g_assert_cmpstr(changed, !=, saved);

    out = qtest_hmp(t.qts, "loadvm snap");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    loaded = mig_state(&t, "r");
    g_assert_cmpstr(loaded, ==, saved);
    g_assert_cmpuint(qrnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_IDLE);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dqp, sizeof(dqp));
    qrnic_test_stop(&t);
    unlink(disk);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/migrate/objects", test_migrate_objects);
    qrnic_test_add_both("/rnic/migrate/savevm", test_migrate_savevm);
    qrnic_test_add_both("/rnic/migrate/connected-reset",
                        test_migrate_connected_reset);
    return g_test_run();
}
