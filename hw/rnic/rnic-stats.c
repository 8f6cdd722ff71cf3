/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Read-only statistics as QOM properties, for qom-get and tests:
 * stat-tx-bytes, stat-rx-bytes, stat-terminates-sent/-received,
 * stat-crc-errors, stat-streams-lost, stat-cqe-<status>,
 * stat-tx-op-<opcode>, stat-rx-op-<opcode> and stat-terminates (by code).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "rnic.h"

static const char *const rnic_cqe_status_names[] = RNIC_CQE_STATUS_NAMES;

/* RDMAP opcodes (RFC 5040, RFC 7306) as stat-tx-op-NAME / stat-rx-op-NAME. */
static const char *const rnic_rdmap_op_names[16] = {
    "write", "read-req", "read-resp", "send", "send-inv", "send-se",
    "send-se-inv", "terminate", "imm-data", "imm-data-se", "atomic-req",
    "atomic-resp",
};

void rnic_stats_term(RnicState *s, bool sent, uint8_t layer, uint8_t etype,
                     uint8_t ecode)
{
    gpointer key = RNIC_STAT_TERM_KEY(sent, layer, etype, ecode);
    uintptr_t n = GPOINTER_TO_UINT(g_hash_table_lookup(s->stats.terms, key));

    g_hash_table_insert(s->stats.terms, key, GUINT_TO_POINTER(n + 1));
    (sent ? &s->stats.terms_sent : &s->stats.terms_received)[0]++;
}

static gint rnic_key_cmp(gconstpointer a, gconstpointer b)
{
    return GPOINTER_TO_UINT(a) < GPOINTER_TO_UINT(b) ? -1 :
           GPOINTER_TO_UINT(a) > GPOINTER_TO_UINT(b);
}

/* "sent 1/1/0x00=2 received 0/2/0xff=1": layer/etype/ecode=count. */
static char *rnic_get_terms(Object *obj, Error **errp)
{
    RnicState *s = RNIC(obj);
    GList *keys;
    GString *out = g_string_new(NULL);

    /* An IOThread may be adding a code: the table is read inside an entry */
    rnic_enter(s);
    keys = g_list_sort(g_hash_table_get_keys(s->stats.terms), rnic_key_cmp);

    for (GList *k = keys; k; k = k->next) {
        uint32_t v = GPOINTER_TO_UINT(k->data);

        g_string_append_printf(out, "%s%s %u/%u/0x%02x=%u", out->len ? " " : "",
                               v >> 24 ? "sent" : "received",
                               (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff,
                               GPOINTER_TO_UINT(g_hash_table_lookup(
                                   s->stats.terms, k->data)));
    }
    g_list_free(keys);
    rnic_leave(s);
    return g_string_free(out, false);
}

/* A counter the data path (an IOThread's, maybe) updates: read inside. */
static void rnic_stat_get(Object *obj, Visitor *v, const char *name,
                          void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    uint64_t value;

    rnic_enter(s);
    value = *(uint64_t *)opaque;
    rnic_leave(s);
    visit_type_uint64(v, name, &value, errp);
}

static void rnic_stat_add(Object *obj, const char *name, uint64_t *v,
                          const char *desc)
{
    object_property_add(obj, name, "uint64", rnic_stat_get, NULL, NULL, v);
    object_property_set_description(obj, name, desc);
}

void rnic_stats_init(RnicState *s)
{
    Object *obj = OBJECT(s);

    s->stats.terms = g_hash_table_new(g_direct_hash, g_direct_equal);
    rnic_stat_add(obj, "stat-tx-bytes", &s->stats.tx_bytes,
                  "bytes written to QP connections");
    rnic_stat_add(obj, "stat-rx-bytes", &s->stats.rx_bytes,
                  "bytes read from QP connections");
    rnic_stat_add(obj, "stat-tx-fpdus", &s->stats.tx_fpdus,
                  "FPDUs sent");
    rnic_stat_add(obj, "stat-terminates-sent", &s->stats.terms_sent,
                  "Terminate messages sent");
    rnic_stat_add(obj, "stat-terminates-received", &s->stats.terms_received,
                  "Terminate messages received");
    rnic_stat_add(obj, "stat-crc-errors", &s->stats.crc_errors,
                  "FPDUs received with a bad CRC32c");
    rnic_stat_add(obj, "stat-tx-crc-corrupted", &s->stats.tx_crc_corrupted,
                  "FPDUs sent with an inverted CRC32c by fault-corrupt-crc");
    rnic_stat_add(obj, "stat-streams-lost", &s->stats.streams_lost,
                  "received streams that could not be parsed");
    for (int i = 0; i < ARRAY_SIZE(rnic_cqe_status_names); i++) {
        /* WR_FLUSH_ERR -> stat-cqe-wr-flush-err */
        g_autofree char *low = g_ascii_strdown(rnic_cqe_status_names[i], -1);
        g_autofree char *name = g_strdup_printf("stat-cqe-%s",
                                                g_strdelimit(low, "_", '-'));

        rnic_stat_add(obj, name, &s->stats.cqe[i],
                      "completions written with this status");
    }
    for (int i = 0; i < ARRAY_SIZE(rnic_rdmap_op_names); i++) {
        g_autofree char *tx = NULL, *rx = NULL;

        if (!rnic_rdmap_op_names[i]) {
            continue;
        }
        tx = g_strdup_printf("stat-tx-op-%s", rnic_rdmap_op_names[i]);
        rx = g_strdup_printf("stat-rx-op-%s", rnic_rdmap_op_names[i]);
        rnic_stat_add(obj, tx, &s->stats.tx_op[i],
                      "FPDUs sent with this RDMAP opcode");
        rnic_stat_add(obj, rx, &s->stats.rx_op[i],
                      "FPDUs received whole (good CRC) with this RDMAP opcode");
    }
    object_property_add_str(obj, "stat-terminates", rnic_get_terms, NULL);
    object_property_set_description(obj, "stat-terminates",
        "Terminates by direction and layer/etype/ecode, with counts");
}

void rnic_stats_fini(RnicState *s)
{
    g_hash_table_destroy(s->stats.terms);
}
