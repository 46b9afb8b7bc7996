/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One io_uring per thread, created on first use and freed when the thread
 * exits (libfuse's worker threads come and go).  The cache store's data
 * file is registered as fixed file 0 of every ring.
 */
#ifndef HOTFS_URING_H
#define HOTFS_URING_H

#include <stdbool.h>

struct io_uring;

#define UR_DEPTH 128

/* This thread's ring, or NULL if io_uring is unavailable. */
struct io_uring *ur_ring(int data_fd, bool *fixed);
/* Drop this thread's ring after an error; the next ur_ring makes one. */
void ur_discard(void);

#endif
