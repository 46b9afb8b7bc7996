/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cache as the rest of the daemon sees it: the store, the policy, the
 * promotion thread, the read-ahead of cached extents and the counters
 * (struct hotfs_cache), their life cycle, and the file keys and stamps
 * the store knows files by.  The paths that use it have files of their
 * own: the read path (readpath.h), writes through the mount
 * (cache_write.h), open-file handles and access counting (handle.h),
 * promotion (promote.h), insert if still current (cache_insert.h) and
 * hotfsctl's operations (cache_ctl.h).
 *
 * Coherence rules (see man/hotfs.8):
 *  - A cached extent carries its source file's stamp (st_ino, size,
 *    mtime_ns, ctime_ns); every read compares it with an fstat of the
 *    open source file, so a file changed behind hotfs's back is read from
 *    the source, never from stale cache.
 *  - A write through the mount bumps the inode's write generation before
 *    it reaches the source and invalidates the file's extents after; data
 *    read from the source enters the store only if the generation did not
 *    move meanwhile (cache_insert.h), so it never caches old data.
 */
#ifndef HOTFS_CACHE_H
#define HOTFS_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hotfs/budget.h"
#include "hotfs/inode.h"
#include "hotfs/opts.h"
#include "hotfs/pins.h"
#include "hotfs/policy.h"
#include "hotfs/stats.h"
#include "hotfs/store.h"

struct hotfs_copies;
struct hotfs_promoter;
struct hotfs_ra;

struct hotfs_cache {
	struct hotfs_store *st;
	struct hotfs_policy *pol;
	struct hotfs_promoter *pr;
	struct hotfs_pins *pins;
	struct hotfs_ra *ra;		/* NULL: no O_DIRECT read-ahead */
	/* the file grain's copies (hotfs/filecopy.h): NULL without
	 * passthrough (hotfs/passthrough.h) */
	struct hotfs_copies *fc;
	bool uring;			/* cached reads on io_uring, else
					 * pread (set by cache_start) */
	struct hotfs_itable *it;
	struct hotfs_stats stats;
	uint32_t extent;		/* bytes, power of two */
	unsigned ext_shift;
	dev_t root_dev;			/* files on it get key.dev = 0 */
	uint64_t run_salt;		/* other devices: 32 random bits */
	/* both may change while mounted (hotfsctl set: src/fuse/settings.c);
	 * each request reads them once */
	_Atomic uint64_t seqcutoff;
	_Atomic enum hotfs_writemode writemode;
	struct hotfs_budget budget;	/* write_budget= */
	int proc_self_fd;
	/* the policy's counts in the cachedir (hotfs/policy_state.h) */
	int dirfd;
	uint64_t counts_tag;
	uint64_t counts_saved;		/* pol_accesses() at the last save */
};

/* Open the store (before mounting: errors go to the caller's stderr). */
int cache_open(struct hotfs_cache **out, const struct hotfs_opts *o,
	       int root_fd, char *err, size_t errlen);
/* Is the store ok?  If not, false and one line for the user in err
 * (its state and why). */
bool cache_usable(struct hotfs_cache *c, char *err, size_t errlen);
/* Start background work (after daemonizing: threads do not survive fork). */
int cache_start(struct hotfs_cache *c, struct hotfs_itable *it,
		int proc_self_fd);
void cache_close(struct hotfs_cache *c);
/* Save the policy's access counts if they moved since the last save
 * (tick.c every CACHE_COUNTS_SAVE_S, and cache_close).  Not
 * concurrently with itself. */
#define CACHE_COUNTS_SAVE_S	120
void cache_save_counts(struct hotfs_cache *c);

/* The store's key of a source file. */
static inline void cache_key(const struct hotfs_cache *c, dev_t dev,
			     ino_t ino, struct hotfs_key *k)
{
	/* device numbers of loop and network filesystems change across
	 * reboots; the source root's device is stable as "0".  Filesystems
	 * mounted inside the source are not probed (hotfs/srcprobe.h):
	 * their device numbers are reused and their inode numbers may
	 * not be kept across their mounts, so their keys carry a salt of
	 * this run and nothing of theirs is found after a restart */
	k->dev = dev == c->root_dev ? 0 :
		 (c->run_salt << 32) ^ (uint64_t)dev;
	k->ino = (uint64_t)ino;
}

/* The stamp cached data of the file st describes goes with. */
static inline void cache_stamp(const struct stat *st, struct hotfs_stamp *s)
{
	srcstamp_of(st, s);
}

static inline bool cache_stamp_eq(const struct hotfs_stamp *a,
				  const struct hotfs_stamp *b)
{
	return a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* The length of extent extno of a file of size bytes (0: past its end). */
static inline uint32_t cache_ext_len(const struct hotfs_cache *c,
				     uint32_t extno, uint64_t size)
{
	uint64_t start = st_rec_off(extno, c->extent);
	uint32_t max = st_rec_max(extno, c->extent);

	if (start >= size)
		return 0;
	return size - start < max ? (uint32_t)(size - start) : max;
}

#endif
