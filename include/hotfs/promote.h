/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Promotion (src/cache/promote.c): extents the policy found hot are copied into
 * the store by a thread of their own, so that the read that made an
 * extent hot is never delayed.  The promoter knows the cache's parts
 * (store, policy, inode table, counters) through struct hotfs_cache's
 * fields and calls nothing of the cache's own files: the read path and
 * the handles queue items here, never the other way.
 */
#ifndef HOTFS_PROMOTE_H
#define HOTFS_PROMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "hotfs/inode.h"
#include "hotfs/store.h"

struct hotfs_cache;
struct hotfs_promoter;

struct pr_item {
	struct hotfs_inode *in;		/* held (ino_hold) while queued */
	struct hotfs_key key;
	uint32_t extno;
	struct hotfs_stamp stamp;	/* of the source when queued */
	uint64_t gen;			/* in->cw.write_gen when queued */
	uint64_t h;			/* pol_hash(key, extno) */
	void *buf;			/* the extent's data, or NULL */
	uint32_t len;			/* bytes in buf */
};

/* rate: bytes/s of second reads of the source, 0 = unlimited. */
int pr_new(struct hotfs_promoter **out, struct hotfs_cache *c,
	   uint64_t rate);
int pr_start(struct hotfs_promoter *pr);
/* Queue it; takes over item->buf and the hold on item->in either way.
 * Returns false if it was dropped (duplicate or queue full). */
bool pr_enqueue(struct hotfs_promoter *pr, struct pr_item *item);
/* Items queued or being promoted: 0 when every one asked for is done
 * (in the store, or dropped). */
unsigned pr_depth(struct hotfs_promoter *pr);
/* promote_rate= while mounted (hotfsctl set): bytes/s, 0 = unlimited;
 * the thread keeps to it within PR_RATE_POLL_MS. */
void pr_set_rate(struct hotfs_promoter *pr, uint64_t rate);
/* Stop the thread and drop the queue. */
void pr_free(struct hotfs_promoter *pr);

#endif
