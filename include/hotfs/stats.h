/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Counters of the read path and of promotion.  Each is a relaxed atomic:
 * no lock on the read path.  The store keeps its own counters
 * (st_get_stats); .hotfs/stats shows both.
 */
#ifndef HOTFS_STATS_H
#define HOTFS_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

enum hotfs_stat {
	STAT_READ_REQS,		/* FUSE reads */
	STAT_READ_BYTES,	/* bytes returned by them */
	STAT_HIT_REQS,		/* served entirely from the cache */
	STAT_PARTIAL_REQS,	/* partly from the cache, partly the source */
	STAT_MISS_REQS,		/* entirely from the source */
	STAT_HIT_BYTES,		/* bytes served from the cache */
	STAT_MISS_BYTES,	/* bytes read from the source for readers */
	STAT_ACCESSES,		/* extent accesses counted by the policy */
	STAT_PROMO_QUEUED,	/* extents queued for promotion */
	STAT_PROMOTIONS,	/* extents inserted into the store */
	STAT_PROMO_BYTES,	/* their bytes */
	STAT_PROMO_REUSED,	/* promoted from the reader's buffer */
	STAT_PROMO_SRC_READS,	/* promoted by reading the source again */
	STAT_PROMO_BLOCKS,	/* promotions of a random reader's block */
	STAT_PROMO_EXTENTS,	/* promotions of an extent */
	STAT_NP_THRESHOLD,	/* accesses below the threshold */
	STAT_NP_SEQCUTOFF,	/* not counted: past seqcutoff */
	STAT_NP_QUEUE_FULL,	/* dropped: promotion queue full */
	STAT_NP_RATE,		/* delayed by promote_rate */
	STAT_NP_ADMISSION,	/* lost admission to a hotter victim */
	STAT_NP_RACE,		/* a write or change raced the promotion */
	STAT_NP_STORE,		/* the store refused (read-only, off, error) */
	STAT_NP_RACY,		/* the file changed within a tick of the
				 * source's clock: its stamp cannot tell
				 * this version from the next (srcprobe.h) */
	STAT_NP_BUDGET,		/* refused by the SSD write budget */
	STAT_CSUM_FAIL,		/* cached data failed its checksum */
	STAT_CACHE_IO_ERR,	/* read errors from the cache device */
	STAT_INVAL_WRITE,	/* writes via the mount that dropped extents */
	STAT_WRITETHROUGH,	/* extents updated in place (writethrough) */
	STAT_FILL_READS,	/* random misses that read their whole extent
				 * while the store filled (readpath.c) */
	STAT_FILL_BLOCKS,	/* blocks of those queued beside the read's */
	STAT__NR
};

struct hotfs_stats {
	_Atomic uint64_t c[STAT__NR];
	struct timespec started;	/* CLOCK_MONOTONIC */
	struct timespec reset;		/* last reset of the counters */
};

static inline void stats_add(struct hotfs_stats *s, enum hotfs_stat i,
			     uint64_t v)
{
	atomic_fetch_add_explicit(&s->c[i], v, memory_order_relaxed);
}

static inline uint64_t stats_get(struct hotfs_stats *s, enum hotfs_stat i)
{
	return atomic_load_explicit(&s->c[i], memory_order_relaxed);
}

#endif
