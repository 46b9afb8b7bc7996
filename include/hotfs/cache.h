/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cache as the FUSE handlers see it: the store, the policy, the
 * promotion thread and the counters, and the cached read path.
 *
 * Coherence rules (see man/hotfs.8):
 *  - A cached extent carries its source file's stamp (st_ino, size,
 *    mtime_ns, ctime_ns); every read compares it with an fstat of the
 *    open source file, so a file changed behind hotfs's back is read from
 *    the source, never from stale cache.
 *  - A write through the mount bumps the inode's write generation before
 *    it reaches the source and invalidates the file's extents after; a
 *    promotion inserts only if the generation did not move meanwhile, and
 *    checks it under the inode lock, so it never caches old data.
 */
#ifndef HOTFS_CACHE_H
#define HOTFS_CACHE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "hotfs/inode.h"
#include "hotfs/ioctl.h"
#include "hotfs/opts.h"
#include "hotfs/pins.h"
#include "hotfs/policy.h"
#include "hotfs/seqread.h"
#include "hotfs/stats.h"
#include "hotfs/store.h"

/*
 * Extents being assembled from the reads of one handle (the kernel reads
 * 128 KiB at a time, several in flight, in any order; extents are larger)
 * so that promoting them needs no second read of the slow disk.  Pieces
 * are whole 4 KiB blocks; a bitmap says which are in.
 */
#define FH_STITCHES	4
/* An access is one handle touching an extent: the extents a handle
 * touched lately are not counted again (the kernel's readahead sends
 * several requests at once, in any order). */
#define FH_RECENT	8
#define FH_BLK		4096u

struct fh_stitch {
	char *buf;			/* NULL = slot free */
	uint64_t *map;			/* blocks present */
	uint32_t extno;
	uint32_t len;			/* the extent's length */
	uint32_t nblk, have;		/* blocks in the extent, present */
	uint64_t age;			/* for replacing the oldest */
	struct hotfs_stamp stamp;
	uint64_t gen;
};

/*
 * An open file through the mount (fuse_file_info.fh), or an inode's
 * shared handle when the kernel sends no open (fh_new_shared: see
 * src/fuse_ops.c, revalidate=never): its fd is -1 (each request brings
 * its own), and an extent it touched counts again after NOFH_WINDOW_NS.
 */
struct hotfs_fh {
	_Atomic int fd;			/* the source file; -1 until the
					 * first use for a lazy handle */
	int lazy_flags;			/* lazy: how to open it (fuse_ops.c,
					 * revalidate=N), under m */
	bool lazy;
	bool shared;			/* an inode's, without open: not on
					 * the list of open handles */
	struct hotfs_fh *prev, *next;	/* all open handles, protected by
					 * fh_list_lock (freed at exit: the
					 * kernel does not release what is
					 * open when the daemon is stopped) */
	bool append;			/* opened O_APPEND */
	pthread_mutex_t m;		/* protects stitch, stitch_age */
	struct fh_stitch stitch[FH_STITCHES];
	uint64_t stitch_age;
	uint32_t recent[FH_RECENT];	/* extents counted lately, protected
					 * by m; FH_NO_EXT = empty */
	unsigned recent_next;		/* protected by m */
	int64_t recent_ns[FH_RECENT];	/* shared: when, protected by m */
	uint64_t recent_run[FH_RECENT];	/* shared: in which run, by m */
	uint64_t run;			/* shared: reads so far that did not
					 * carry on the last one, by m */
	struct seqread seq;		/* sequential reading, read-ahead */
};

#define FH_NO_EXT UINT32_MAX

struct hotfs_promoter;
struct hotfs_ra;

struct hotfs_cache {
	struct hotfs_store *st;
	struct hotfs_policy *pol;
	struct hotfs_promoter *pr;
	struct hotfs_pins *pins;
	struct hotfs_ra *ra;		/* NULL: no O_DIRECT read-ahead */
	struct hotfs_itable *it;
	struct hotfs_stats stats;
	uint32_t extent;		/* bytes, power of two */
	unsigned ext_shift;
	dev_t root_dev;			/* files on it get key.dev = 0 */
	uint64_t run_salt;		/* other devices: 32 random bits */
	uint64_t seqcutoff;
	enum hotfs_writemode writemode;
	int proc_self_fd;
	/* the policy's counts in the cachedir (hotfs/policy_state.h) */
	int dirfd;
	uint64_t counts_tag;
	uint64_t counts_saved;		/* pol_accesses() at the last save */
};

/* Open the store (before mounting: errors go to the caller's stderr). */
int cache_open(struct hotfs_cache **out, const struct hotfs_opts *o,
	       int root_fd, char *err, size_t errlen);
/* Start background work (after daemonizing: threads do not survive fork). */
int cache_start(struct hotfs_cache *c, struct hotfs_itable *it,
		int proc_self_fd);
void cache_close(struct hotfs_cache *c);
/* Save the policy's access counts if they moved since the last save
 * (the promoter every CACHE_COUNTS_SAVE_S, and cache_close).  Not
 * concurrently with itself. */
#define CACHE_COUNTS_SAVE_S	120
void cache_save_counts(struct hotfs_cache *c);

void cache_key(const struct hotfs_cache *c, dev_t dev, ino_t ino,
	       struct hotfs_key *k);
void cache_stamp(const struct stat *st, struct hotfs_stamp *s);

/*
 * A write through the mount (write, truncate, fallocate, copy_file_range,
 * open with O_TRUNC): cache_write_begin before it reaches the source,
 * cache_write_end after, before the reply.  The extents the write touched
 * are dropped (writearound) or updated (writethrough, when the written
 * bytes are at hand); the file's other cached extents stay valid.
 * len = 0: no range written (a size change); CACHE_WR_TO_END: everything
 * from off on (e.g. fallocate's collapse and insert).  c may be NULL.
 * cache_write_begin takes the range the write may touch (len 0: the
 * whole file), cache_write_end the range it did touch.
 */
struct cache_wr {
	uint64_t gen;			/* in->write_gen after the bump */
	struct hotfs_stamp old;		/* the source before the write */
	bool have_old;
	int fd;				/* the inode's O_PATH fd, in use
					 * (ino_fd) until cache_write_end;
					 * -1 if it could not be had */
};

#define CACHE_WR_TO_END UINT64_MAX

/* it: the inode table (ino_fd), needed even when c is NULL. */
void cache_write_begin(struct hotfs_cache *c, struct hotfs_itable *it,
		       struct hotfs_inode *in, struct cache_wr *w,
		       uint64_t off, uint64_t len);
void cache_write_end(struct hotfs_cache *c, struct hotfs_inode *in,
		     struct cache_wr *w, uint64_t off, uint64_t len,
		     const void *data);

struct hotfs_fh *fh_new(int fd);
/* On release: queue what the handle was assembling.  c may be NULL. */
void cache_release(struct hotfs_cache *c, struct hotfs_inode *in,
		   struct hotfs_fh *fh);
void fh_free(struct hotfs_fh *fh);
/* An inode's shared handle (no fd, not on the list); fh_free frees it. */
struct hotfs_fh *fh_new_shared(void);
/* Without open, one access is a handle-less read of an extent that the
 * inode's reads had not touched in the last 200 ms, or only in other runs
 * (reads going on where the last one ended: readahead splits one reader's
 * extent into several requests, a second pass starts a new run). */
#define NOFH_WINDOW_NS	200000000LL
/* At exit: free the handles the kernel never released. */
void fh_free_all(void);

/* Serve a FUSE read from fd (the source, readable; fh->fd unless fh is
 * shared); replies exactly once. */
void cache_read(fuse_req_t req, struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_fh *fh, int fd, size_t size, off_t off);

/*
 * hotfsctl's requests (include/hotfs/ioctl.h), each on one file.  They
 * run in the calling FUSE thread: warm reads the source synchronously,
 * one extent at a time, not limited by promote_rate (it is explicit).
 */
int cache_warm(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io);
int cache_evict(struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_ioc *io);
int cache_info(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io);
int cache_pin(struct hotfs_cache *c, struct hotfs_inode *in, bool on);

/* ---- promotion (src/promote.c) ---- */

struct pr_item {
	struct hotfs_inode *in;		/* held (ino_hold) while queued */
	struct hotfs_key key;
	uint32_t extno;
	struct hotfs_stamp stamp;	/* of the source when queued */
	uint64_t gen;			/* in->write_gen when queued */
	uint64_t h;			/* pol_hash(key, extno) */
	void *buf;			/* the extent's data, or NULL */
	uint32_t len;			/* bytes in buf */
};

int pr_new(struct hotfs_promoter **out, struct hotfs_cache *c,
	   uint64_t rate);
int pr_start(struct hotfs_promoter *pr);
/* Queue it; takes over item->buf and the hold on item->in either way.
 * Returns false if it was dropped (duplicate or queue full). */
bool pr_enqueue(struct hotfs_promoter *pr, struct pr_item *item);
unsigned pr_depth(struct hotfs_promoter *pr);
void pr_free(struct hotfs_promoter *pr);

/* Answer a read from the source fd (the error if it fails part way). */
void cache_reply_source(fuse_req_t req, int fd, size_t size, off_t off);

#endif
