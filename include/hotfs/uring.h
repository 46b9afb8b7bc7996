/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One io_uring per thread, created on first use and freed when the thread
 * exits (libfuse's worker threads come and go).  The cache store's data
 * file is registered as fixed file 0 of every ring.
 */
#ifndef HOTFS_URING_H
#define HOTFS_URING_H

#include <stdbool.h>
#include <stddef.h>

struct io_uring;

#define UR_DEPTH 128

/*
 * Can this process use io_uring?  Tried once at start; false with the
 * reason in why (refused by the kernel, or not built).
 */
bool ur_probe(char *why, size_t whylen);
/*
 * This thread's ring, or NULL if io_uring is unavailable.  The store's
 * data_fd is registered as fixed file 0 at the first call that can
 * (*fixed), and stays for the ring's life: the daemon opens one store
 * per process (a test that opens another calls ur_discard first).
 */
struct io_uring *ur_ring(int data_fd, bool *fixed);
/* Drop this thread's ring after an error; the next ur_ring makes one. */
void ur_discard(void);

#endif
