/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Open files through the mount (src/cache/handle.c): their handles, what counts
 * as one access for the policy, and the extents a handle's reads are
 * assembling for promotion.
 *
 * An access is one handle touching an extent: the extents a handle
 * touched lately are not counted again (the kernel's readahead sends
 * several requests at once, in any order).  A handle past seqcutoff in
 * one sequential run counts nothing more (hotfs/seqread.h).
 *
 * Extents are larger than the kernel's reads (128 KiB at a time, several
 * in flight, in any order): a handle assembles an extent from its reads,
 * whole 4 KiB blocks with a bitmap of those present, so that promoting it
 * needs no second read of the slow disk.
 *
 * Locks: fh->m (a leaf) protects a handle's stitches and recent extents;
 * fh_list_lock the list of open handles.
 */
#ifndef HOTFS_HANDLE_H
#define HOTFS_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotfs/cache.h"
#include "hotfs/inode.h"
#include "hotfs/seqread.h"

#define FH_STITCHES	4
#define FH_RECENT	8
#define FH_BLK		4096u
#define FH_NO_EXT	UINT32_MAX

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
 * src/fuse/fuse_file.c, revalidate=never): its fd is -1 (each request brings
 * its own), and an extent it touched counts again after NOFH_WINDOW_NS.
 */
struct hotfs_fh {
	_Atomic int fd;			/* the source file; -1 until the
					 * first use for a lazy handle */
	int lazy_flags;			/* lazy: how to open it (fop_open.c,
					 * revalidate=N), under m */
	bool lazy;
	bool shared;			/* an inode's, without open: not on
					 * the list of open handles */
	struct hotfs_fh *prev, *next;	/* all open handles, protected by
					 * fh_list_lock (freed at exit: the
					 * kernel does not release what is
					 * open when the daemon is stopped) */
	bool append;			/* opened O_APPEND */
	bool pt;			/* a passthrough open (fop_open.c) */
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

/* Without open, one access is a handle-less read of an extent that the
 * inode's reads had not touched in the last 200 ms, or only in other runs
 * (reads going on where the last one ended: readahead splits one reader's
 * extent into several requests, a second pass starts a new run). */
#define NOFH_WINDOW_NS	200000000LL

/*
 * The source file of fh, opened now (*opened) through the inode's O_PATH
 * fd if the handle is lazy (lazy_flags; revalidate=N opens without the
 * source, src/fop/fop_open.c): the fd, or -errno.
 */
int fh_source(struct hotfs_fh *fh, struct hotfs_itable *it,
	      struct hotfs_inode *in, int proc_self_fd, bool *opened);

/* A handle on the source file fd (owned: fh_free closes it). */
struct hotfs_fh *fh_new(int fd);
/* An inode's shared handle (no fd, not on the list); fh_free frees it. */
struct hotfs_fh *fh_new_shared(void);
void fh_free(struct hotfs_fh *fh);
/* At exit: free the handles the kernel never released. */
void fh_free_all(void);

/* Does the policy count a read of size bytes at off?  Updates the
 * handle's sequential state; *seq: the read carries on its run. */
bool fh_counts(struct hotfs_cache *c, struct hotfs_fh *fh, size_t size,
	       off_t off, bool *seq);
/* The run a read belongs to (a shared handle starts a new one at every
 * read that does not carry on where its last read ended). */
uint64_t fh_run(struct hotfs_fh *fh, bool seq);
/* Has this handle touched extno lately?  Remembers it if not. */
bool fh_seen(struct hotfs_fh *fh, uint32_t extno, uint64_t run);
/* The monotonic clock the handles read (hotfs/clock.h's unless a unit
 * test sets its own; NULL: that one again). */
void fh_set_clock(int64_t (*now)(void));

/* An extent a read found hot and not cached: [start, end) of it read. */
struct fh_cand {
	uint64_t start, end;		/* file offsets */
	uint32_t extno;
};

/*
 * After a read: queue the n candidates for promotion.  With the read's
 * bytes at hand (data != NULL, for [data_off, data_off + data_len)), an
 * extent the read covered is queued with its bytes, and one it covered in
 * part is assembled over the handle's following reads.  Before the reply:
 * it may be the kernel's last reference to the handle and the inode.
 */
void fh_queue(struct hotfs_cache *c, struct hotfs_inode *in,
	      struct hotfs_fh *fh, const struct hotfs_key *k,
	      const struct hotfs_stamp *stamp, uint64_t gen,
	      const struct fh_cand *v, unsigned n, const char *data,
	      uint64_t data_off, uint64_t data_len);
/* On release: queue what the handle was assembling.  c may be NULL. */
void fh_release(struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_fh *fh);

#endif
