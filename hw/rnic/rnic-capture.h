/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hooks of the device's capture (property "capture", rnic-capture.c) at
 * the places where a connection's socket is written, read and closed.
 * While the capture is off each costs one test of a pointer.
 */
#ifndef HW_RNIC_CAPTURE_H
#define HW_RNIC_CAPTURE_H

#include "rnic.h"

void rnic_capture_io(RnicConn *c, bool tx, const struct iovec *iov, int cnt,
                     ssize_t n);
void rnic_capture_gone(RnicConn *c, bool abortive);

/* @n octets of @iov were written (n <= 0: nothing). */
static inline void rnic_capture_sent(RnicConn *c, const struct iovec *iov,
                                     int cnt, ssize_t n)
{
    if (unlikely(c->s->capture) && n > 0) {
        rnic_capture_io(c, true, iov, cnt, n);
    }
}

static inline void rnic_capture_sent_buf(RnicConn *c, const void *buf,
                                         ssize_t n)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = MAX(n, 0) };

    rnic_capture_sent(c, &iov, 1, n);
}

/* recv() returned @n: data, 0 (the peer's FIN) or -1 with errno. */
static inline void rnic_capture_received(RnicConn *c, const void *buf,
                                         ssize_t n)
{
    if (unlikely(c->s->capture)) {
        struct iovec iov = { .iov_base = (void *)buf, .iov_len = MAX(n, 0) };

        rnic_capture_io(c, false, &iov, 1, n);
    }
}

/* The connection is closed (@abortive: reset) or freed. */
static inline void rnic_capture_closed(RnicConn *c, bool abortive)
{
    if (unlikely(c->s->capture)) {
        rnic_capture_gone(c, abortive);
    }
}

#endif /* HW_RNIC_CAPTURE_H */
