/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Read-ahead of cached extents for large and sequential reads.
 *
 * The kernel reads a file through the mount 128-256 KiB at a time.  Served
 * one request at a time from the store's data file with buffered reads,
 * the store's bytes pass through the page cache on their way to the reply,
 * beside the mount's own page cache copy of the same bytes: a cached pass
 * over a file touches twice its size in RAM, and the daemon copies every
 * byte twice.  Here a cached extent is read whole, with O_DIRECT (the
 * device writes straight into one of a few reused buffers), on a ring of
 * its own drained by one thread, a few extents ahead of a sequential
 * reader; the whole-extent checksum is verified once per read, by the
 * thread that reaps it (off the readers' path), and the requests that
 * fall in the extent are answered from the buffer.
 *
 * What a buffer holds is a copy of immutable bytes: a slot is named by the
 * extent's place in the data file and its region generation (struct
 * hotfs_loc), which the store never rewrites without changing the
 * generation (st_verify checks it after the read), and the caller finds
 * the slot through a lookup of the store's index, which a write through
 * the mount or a stale stamp has already emptied.
 *
 * A slot serves the reader streaming through it, not later ones: once
 * given back as done, or a second after its read, its extent is read from
 * the device again, so a page cache drop reaches the device and damage
 * there is found by the next reader.
 *
 * Memory: RA_BUDGET bytes of buffers (at least RA_MIN_SLOTS extents),
 * allocated on first use.  A filesystem that refuses O_DIRECT (tmpfs) or
 * a kernel without io_uring: ra_new fails and the read path goes on with
 * buffered reads.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef HOTFS_READAHEAD_H
#define HOTFS_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotfs/store.h"

struct hotfs_ra;

#define RA_BUDGET	(32u << 20)
#define RA_MIN_SLOTS	8u
/* How far ahead of a sequential reader, in bytes (at least one extent):
 * with the kernel's 1 MiB requests (-o read_ahead), 2 MiB left a reader
 * waiting for two extents in three; 8 MiB cut a cached cp's time by 15-20%
 * and 16 MiB was slower again (contrib/bench/NOTEBOOK.md). */
#define RA_AHEAD	(8u << 20)

/* A slot in use by a caller: data holds the extent's loc.len bytes. */
struct ra_ref {
	void *slot;
	const char *data;
};

struct ra_counts {
	uint64_t reads;		/* whole extents read */
	uint64_t bytes;		/* bytes read for them */
	uint64_t served;	/* requests served from a slot */
	uint64_t waited;	/* of which waited for the slot's read */
	uint64_t failed;	/* reads or checks that failed (the caller
				 * then took the ordinary path) */
};

/*
 * Start read-ahead on the store's data file (st_data_fd, opened again
 * here with O_DIRECT) for extents of up to extent bytes, with budget
 * bytes of buffers (0 = RA_BUDGET).  -errno when O_DIRECT or io_uring is
 * not available there; *why says it in a few words.  st outlives ra.
 */
int ra_new(struct hotfs_ra **out, struct hotfs_store *st, uint32_t extent,
	   size_t budget, char *why, size_t whylen);
/* Stop the thread (waiting for reads in flight) and free; ra may be NULL. */
void ra_free(struct hotfs_ra *ra);

/* Can loc's extent be read here (offset and buffer alignment)? */
bool ra_eligible(const struct hotfs_ra *ra, const struct hotfs_loc *loc);
/* Start reading loc's extent unless it is held or under way; never
 * waits.  false if no slot was free. */
bool ra_prefetch(struct hotfs_ra *ra, const struct hotfs_loc *loc);
/*
 * The whole of loc's extent, read (started here if needed, waited for)
 * and verified against loc with st_verify: 0 and *ref, to be given back
 * with ra_put; or -ESTALE / -EBADMSG (the extent is stale or corrupt:
 * read the source), or another -errno (no slot, read failed: use the
 * ordinary path).
 */
int ra_get(struct hotfs_ra *ra, const struct hotfs_loc *loc,
	   struct ra_ref *ref);
/* Give a slot back; done: the reader is past its extent, so it is the
 * first to be reused. */
void ra_put(struct hotfs_ra *ra, struct ra_ref *ref, bool done);
/* All zero for ra == NULL. */
void ra_get_counts(struct hotfs_ra *ra, struct ra_counts *out);

#endif
