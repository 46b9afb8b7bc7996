/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the read path: its plan of a read, shared by readpath.c
 * (planning and serving reads from the store) and rp_reply.c (the
 * answers from the source or a whole copy, and their release), which
 * calls nothing of readpath.c.
 */
#ifndef HOTFS_READPATH_I_H
#define HOTFS_READPATH_I_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotfs/cache.h"
#include "hotfs/inode.h"
#include "hotfs/readpath.h"
#include "hotfs/srcstamp.h"

struct seg;		/* readpath.c's: a segment of a read */

/* The read's plan: its segments, the cached ones found. */
struct plan {
	struct hotfs_inode *in;
	struct hotfs_key k;
	struct hotfs_stamp stamp;
	uint64_t gen;		/* in->cw.write_gen before the lookups */
	uint64_t end;		/* of the read, within the file */
	struct seg *s;
	unsigned n, hits, promos;
	unsigned blocks;	/* segments that are blocks */
	bool seq;
	/* taken before the read: bytes read from the source now may be a
	 * version that a change in the same clock tick replaces under the
	 * same stamp; they are not promoted until the tick is over */
	bool racy;
	/* under a stamp that may be older than the store's records: look
	 * up without dropping them (cache_read_stored) */
	bool peek;
};

/* rp_reply.c: a read from the file's whole copy; -ENOENT without one */
int rp_read_copy(struct hotfs_cache *c, const struct plan *p, off_t off,
		 struct rp_reply *out);

#endif
