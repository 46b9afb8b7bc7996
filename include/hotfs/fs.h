/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mounted filesystem's state: main.c builds it, the FUSE layer
 * (src/fuse_*.c, ctl.c) answers requests from it, and the parts that act
 * on the whole mount (settings.c, tick.c, wb.c, meta_fs.c, stats.c, ...)
 * are given it.
 */
#ifndef HOTFS_FS_H
#define HOTFS_FS_H

#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "hotfs/cache.h"
#include "hotfs/ctl.h"
#include "hotfs/inode.h"
#include "hotfs/opts.h"

struct hotfs {
	struct hotfs_opts *o;
	struct fuse_session *se;
	struct hotfs_itable *it;
	int root_fd;			/* O_PATH on the source root */
	int proc_self_fd;		/* O_PATH on /proc/self/fd */
	bool as_root;			/* daemon runs as root: act as caller */
	bool dont_mask;			/* the kernel left the umask to us */
	bool listings;			/* keep directory listings */
	bool no_opendir;		/* directories need no opendir */
	bool no_open;			/* files need no open (revalidate=never) */
	/* this mount wrote a log an earlier writeback mount left to the
	 * source before anything else: the metadata snapshot, saved while
	 * that data was dirty, holds the sizes from before it */
	bool left_drained;
	/* NULL with -o nocache, or until a store that could not open at
	 * mount opens ("store on"); set once, never cleared while mounted:
	 * read it once per request, with fs_cache() */
	struct hotfs_cache *cache;
	pthread_mutex_t cache_lock;	/* "store on"; cache_off, _since */
	struct hotfs_watch *watch;	/* NULL unless revalidate=open */
	struct hotfs_meta *meta;	/* NULL without listings */
	struct hotfs_wb *wb;		/* writemode=writeback, else NULL */
	char *cache_off;		/* or why the store could not open */
	struct timespec cache_off_since;	/* CLOCK_REALTIME */
	const char *ctldir;		/* name of the control directory */
	uid_t owner_uid;		/* who mounted: may use .hotfs/ctl */
	gid_t owner_gid;
	struct timespec mount_time;
	dev_t mount_dev;		/* the mount's device (its bdi) */
	bool mount_dev_known;		/* found in /proc/self/mountinfo */
	/* metadata requests that reached the daemon (relaxed atomics) */
	_Atomic uint64_t n_lookup, n_getattr, n_open, n_opendir;
	/* opens of source files for open handles (lazy ones included) */
	_Atomic uint64_t n_src_open;
	/* lookups answered from the name cache (hotfs/namecache.h) */
	_Atomic uint64_t n_lookup_kept;
	/* the lookup, getattr, open, opendir and read requests that came
	 * through FUSE over io_uring's queues (hotfs/fuse_uring.h) */
	_Atomic uint64_t n_uring;
	/* passthrough opens (hotfs/passthrough.h): on for the mount (set
	 * at FUSE_INIT, cleared if the kernel refuses a backing file),
	 * opens answered with a copy, opens answered ESTALE for a new
	 * node */
	_Atomic bool passthrough;
	_Atomic(const char *) pt_why;	/* for the stats: "on", or why not */
	_Atomic uint64_t n_pt_open, n_pt_stale;
};

extern const struct fuse_lowlevel_ops hotfs_ll_ops;

static inline struct hotfs_cache *fs_cache(struct hotfs *fs)
{
	return __atomic_load_n(&fs->cache, __ATOMIC_ACQUIRE);
}

/*
 * Open the store that could not open at mount, now that its cause is
 * fixed ("store on" on the control channel), and start caching without
 * a remount.  Returns 0, 1 if it was on already, or -errno with one line
 * in msg (and the new reason in the stats).
 */
int fs_store_on(struct hotfs *fs, char *msg, size_t len);


#endif
