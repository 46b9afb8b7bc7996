/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Is a handle being read sequentially?  And how far ahead of its reader
 * has the read-ahead of cached extents gone?
 *
 * The kernel's read-ahead sends a window's requests at once (four of 1 MiB
 * for read_ahead=4M), and the daemon's threads take them in any order: a
 * read that starts exactly where the previous one ended is not the test.
 * A read carries on the run when it starts at or after the end of the
 * furthest read so far, by at most SEQ_SLACK times its own size or the
 * run's largest read's (the kernel sends a small request now and then
 * amid a window of large ones), or before it by at most as much within
 * SEQ_REORDER_NS of the run's last read (a request of the same window,
 * taken late), or within twice the run's longest pause between two reads
 * so far, up to SEQ_REORDER_MAX_NS (a daemon starved of CPU takes every
 * request late: measured on a loaded machine, 126-359 ms).  The run's
 * end only ever moves forward while it lasts.  Anything else (a seek
 * back to the start, a second pass over a small file, a jump elsewhere)
 * starts a new run.  Small random reads stay random: their slack is
 * eight of their own small sizes.  A read within the bytes of a run's
 * only read is that read again: not sequential, and the run stays as it
 * was, so that a random reader with several reads in flight, reading a
 * hot block twice in a row, is not taken for a sequential one (its reads
 * would go by extents).  In a longer run such a read is the run's (two readers of a
 * shared handle in step).
 *
 * SEQ_REORDER_NS is below NOFH_WINDOW_NS (hotfs/cache.h): a shared
 * handle's extents count again from a new run only after that window,
 * so a re-read taken for the same run within it counts as it would have
 * (on a machine slow enough to stretch it, one counts less).
 *
 * The run's bytes drive seqcutoff= and whether a read is large enough to
 * be read ahead; the prefetch mark spares the read-ahead a lookup of the
 * extents it has already started in this run.
 *
 * Threads: every function may be called by concurrent readers of one
 * handle; the state is seven atomics.  Concurrent readers of one handle
 * see one run (what a shared handle without opens stands for).
 */
#ifndef HOTFS_SEQREAD_H
#define HOTFS_SEQREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEQ_SLACK 8
#define SEQ_REORDER_NS 100000000LL
#define SEQ_REORDER_MAX_NS 2000000000LL

struct seqread {
	_Atomic int64_t end;	/* the end of the run's furthest read; -1:
				 * nothing read yet */
	_Atomic int64_t head;	/* and its start */
	_Atomic uint64_t run;	/* bytes read in the run so far */
	_Atomic uint64_t mark;	/* extents below this one were prefetched
				 * in the run (0: none) */
	_Atomic int64_t last_ns; /* when the run's last read came */
	_Atomic uint64_t big;	/* the run's largest read */
	_Atomic uint64_t gap_ns; /* its longest pause between two reads */
};

void seq_init(struct seqread *s);

/*
 * A read of size bytes at off, at now_ns (CLOCK_MONOTONIC): does it carry
 * on the run?  *run (may be NULL) gets the run's bytes, this read's
 * included.
 */
bool seq_note(struct seqread *s, int64_t off, size_t size, int64_t now_ns,
	      uint64_t *run);

/* The run's bytes so far. */
uint64_t seq_run(const struct seqread *s);

/* Where a prefetch of the extents after last should start: last + 1, or
 * further if this run has prefetched past it already. */
uint64_t seq_prefetch_from(const struct seqread *s, uint64_t last);

/* Extents below upto have been prefetched (the mark only moves forward;
 * a new run resets it). */
void seq_prefetched(struct seqread *s, uint64_t upto);

#endif
