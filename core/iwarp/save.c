/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The byte buffers of save.h: little-endian, bounds-checked reads. */
#include <stdlib.h>
#include <string.h>
#include "save.h"

void rnic_sv_bytes(struct rnic_sv *s, const void *p, size_t n)
{
    if (s->failed || !n) {
        return;
    }
    if (n > s->cap - s->len) {
        size_t cap = s->cap ? s->cap : 4096;
        uint8_t *buf;

        while (cap - s->len < n) {
            if (cap > SIZE_MAX / 2) {
                s->failed = true;
                return;
            }
            cap *= 2;
        }
        buf = realloc(s->buf, cap);
        if (!buf) {
            s->failed = true;
            return;
        }
        s->buf = buf;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static void rnic_sv_le(struct rnic_sv *s, uint64_t v, unsigned n)
{
    uint8_t b[8];

    for (unsigned i = 0; i < n; i++) {
        b[i] = v >> (8 * i);
    }
    rnic_sv_bytes(s, b, n);
}

void rnic_sv_u8(struct rnic_sv *s, uint8_t v)
{
    rnic_sv_le(s, v, 1);
}

void rnic_sv_u16(struct rnic_sv *s, uint16_t v)
{
    rnic_sv_le(s, v, 2);
}

void rnic_sv_u32(struct rnic_sv *s, uint32_t v)
{
    rnic_sv_le(s, v, 4);
}

void rnic_sv_u64(struct rnic_sv *s, uint64_t v)
{
    rnic_sv_le(s, v, 8);
}

void rnic_sv_free(struct rnic_sv *s)
{
    free(s->buf);
    *s = (struct rnic_sv) { 0 };
}

void rnic_ld_init(struct rnic_ld *l, const void *buf, size_t len)
{
    *l = (struct rnic_ld) { .buf = buf, .len = len };
}

bool rnic_ld_bytes(struct rnic_ld *l, void *p, size_t n)
{
    if (l->failed || n > l->len - l->off) {
        l->failed = true;
        memset(p, 0, n);
        return false;
    }
    memcpy(p, l->buf + l->off, n);
    l->off += n;
    return true;
}

static uint64_t rnic_ld_le(struct rnic_ld *l, unsigned n)
{
    uint8_t b[8];
    uint64_t v = 0;

    rnic_ld_bytes(l, b, n);
    for (unsigned i = 0; i < n; i++) {
        v |= (uint64_t)b[i] << (8 * i);
    }
    return v;
}

uint8_t rnic_ld_u8(struct rnic_ld *l)
{
    return rnic_ld_le(l, 1);
}

uint16_t rnic_ld_u16(struct rnic_ld *l)
{
    return rnic_ld_le(l, 2);
}

uint32_t rnic_ld_u32(struct rnic_ld *l)
{
    return rnic_ld_le(l, 4);
}

uint64_t rnic_ld_u64(struct rnic_ld *l)
{
    return rnic_ld_le(l, 8);
}

uint32_t rnic_ld_count(struct rnic_ld *l, uint32_t max)
{
    uint32_t n = rnic_ld_u32(l);

    if (n > max) {
        l->failed = true;
        return 0;
    }
    return n;
}
