/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writes through the mount and the cache (src/cache/cache_write.c): what a
 * write, truncate, fallocate, copy_file_range or an open with O_TRUNC does
 * to the file's cached extents in each write mode.
 *
 * cache_write_begin before the change reaches the source, cache_write_end
 * after, before the reply.  The extents the write touched are dropped
 * (writearound) or updated (writethrough, when the written bytes are at
 * hand); the file's other cached extents stay valid under its new stamp.
 * len = 0: no range written (a size change); CACHE_WR_TO_END: everything
 * from off on (e.g. fallocate's collapse and insert).  c may be NULL.
 * cache_write_begin takes the range the write may touch (len 0: the
 * whole file), cache_write_end the range it did touch.
 *
 * With w->fill (writeback's flush, its bytes durable on the source): the
 * records (extents, else blocks) that data covers whole are inserted
 * under the stamp the write left, as clean cached data, if the store is
 * ok and write_budget= admits them, and no other change of the file's
 * was in flight; the access counts' admission is not asked (the bytes
 * were just written: hot by definition, as dm-writecache keeps them).
 */
#ifndef HOTFS_CACHE_WRITE_H
#define HOTFS_CACHE_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "hotfs/cache.h"
#include "hotfs/inode.h"

struct cache_wr {
	uint64_t gen;			/* in->cw.write_gen after the bump */
	bool have_old;			/* false: its end drops every
					 * record of the file (the source's
					 * stamp before it is not known) */
	int fd;				/* the inode's O_PATH fd, in use
					 * (ino_fd) until cache_write_end;
					 * -1 if it could not be had */
	bool fill;			/* set after cache_write_begin: the
					 * written bytes become cached data
					 * (writeback's flush) */
	bool patch;			/* set after cache_write_begin: the
					 * written bytes patch the cached
					 * ones (writethrough; the file
					 * operations decide, hotfs/fop.h) */
	uint32_t first, last;		/* the extents it may touch */
	struct cache_wr *next;		/* in in->cw.wr_list, in flight */
};

#define CACHE_WR_TO_END UINT64_MAX

/* it: the inode table (ino_fd), needed even when c is NULL. */
void cache_write_begin(struct hotfs_cache *c, struct hotfs_itable *it,
		       struct hotfs_inode *in, struct cache_wr *w,
		       uint64_t off, uint64_t len);
void cache_write_end(struct hotfs_cache *c, struct hotfs_inode *in,
		     struct cache_wr *w, uint64_t off, uint64_t len,
		     const void *data);

/* Is a write that may touch extents [first, last] in flight?  m held. */
bool cache_write_busy(const struct hotfs_inode *in, uint32_t first,
		      uint32_t last);
/* Is any write of the file in flight?  m held. */
static inline bool cache_write_busy_locked(const struct hotfs_inode *in)
{
	return in->cw.wr_inflight != 0;
}

#endif
