/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode table: one struct hotfs_inode per source object the kernel
 * knows about, keyed by the source's (st_dev, st_ino) so that hard links
 * share one node (libfuse passthrough_hp.cc's SrcId).  Each holds an O_PATH
 * fd on the source object, or can reopen one (ino_fd); every operation is
 * an *at() call relative to such an fd, so no path string is ever built
 * and no symlink in the source leads out of it.
 *
 * Lock order: table lock -> inode lock (the whole order is in
 * src/README.md).  Neither is held across a reply or across I/O on the
 * source, except the fstat that stamps a change of the mount's own
 * (hotfs/stamp.h); the store's insert runs under the inode lock
 * (hotfs/cache_insert.h says why).
 */
#ifndef HOTFS_INODE_H
#define HOTFS_INODE_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hotfs/srcstamp.h"

/*
 * A directory's entries as the source returned them, kept with the
 * directory's stamp when the listing was read: later opendirs that find
 * the same stamp are answered from memory (no read of the directory's
 * blocks on the slow disk).  Immutable once made; shared by reference.
 */
struct hotfs_lent {
	uint64_t ino;
	unsigned char type;		/* DT_* */
	const char *name;
};

struct hotfs_listing {
	_Atomic unsigned refs;
	int64_t mtime_ns, ctime_ns;
	off_t size;
	size_t n, bytes;
	uint32_t gen;			/* which listing: offsets carry it */
	bool racy;			/* the directory changed within a clock
					 * tick of the read: its stamp cannot
					 * prove the listing current later */
	/* a remote source's (revalidate=N, hotfs/dirlist.h): when the
	 * opendir that read it began (CLOCK_MONOTONIC ns, 0: a stamped
	 * listing) and the name cache's change generation then */
	int64_t made_ns;
	uint64_t nc_gen;
	struct hotfs_lent *ents;
	char *names;			/* all names, NUL-separated */
};

void listing_put(struct hotfs_listing *l);
/* Make l the directory's listing (it takes l); false if over the
 * memory bound (l is then freed). */
struct hotfs_inode;
bool listing_install(struct hotfs_inode *in, struct hotfs_listing *l);
/* The same, and with keep the caller keeps a reference of its own
 * (taken before l is seen by another thread); over the bound l is left to
 * the caller (one reference; l->bytes then counts nothing: zero it before
 * listing_put or before another thread can see it). */
bool listing_try_install(struct hotfs_inode *in, struct hotfs_listing *l,
			 bool keep);
/* Bytes all listings use; new ones are not kept past LISTING_MAX_BYTES. */
size_t listing_bytes(void);
#define LISTING_MAX_BYTES	(64u << 20)

/*
 * Names a lookup found absent in a directory, with the directory's stamp
 * from before the lookup (hotfs/negcache.h).  Protected by the inode's m.
 */
#define HOTFS_NEG_MAX 8
struct hotfs_names;

struct hotfs_neg {
	int64_t mtime_ns, ctime_ns;
	unsigned n, next;
	char *names[HOTFS_NEG_MAX];
};

void neg_free(struct hotfs_neg *neg);

/*
 * A write through the mount as cache_insert needs to know it: the bytes
 * whose records it dropped [lo, hi), the file's stamps before and after,
 * and in->write_gen at its end.  A ring of the last WR_NOTES, and from:
 * no write that ended after write_gen from is missing from it.
 */
#define WR_NOTES	8
struct hotfs_wr_note {
	uint64_t gen_end;
	uint64_t lo, hi;
	struct hotfs_stamp old, now;
};
struct hotfs_wr_notes {
	struct hotfs_wr_note n[WR_NOTES];
	unsigned next, count;
	uint64_t from;
};

struct cache_wr;

/*
 * The parts of an inode each module owns, under the inode's m unless a
 * field says otherwise.  The fields of struct hotfs_inode outside them
 * are the table's own (inode.c), and the open handles' count and shared
 * handle (fop_open.c, handle.c).
 */

/* stamp.c's (hotfs/stamp.h): the source stamp the kernel's pages and
 * attributes go with, and the mount's changes in flight. */
struct ino_stamps {
	/* an open that finds the same stamp keeps the kernel's page
	 * cache */
	bool stamp_valid;
	bool stamp_ours;	/* recorded at the end of a change of ours */
	/* the stamp was recorded, or the kernel's pages dropped, once it
	 * was no longer racy (hotfs/srcprobe.h): the pages are of the
	 * version the stamp names, not of an older one of the same tick */
	bool stamp_settled;
	/* when an open last took the stamp from the source (CLOCK_MONOTONIC
	 * ns; 0: never): revalidate=N trusts it that long */
	int64_t stamp_checked_ns;
	struct hotfs_stamp stamp;	/* valid if stamp_valid */
	unsigned chg_inflight;
	bool chg_ours;
	/* changes behind the mount recorded by a getattr or the source
	 * watch whose invalidation has not reached the kernel yet */
	unsigned inval_pending;
	pthread_cond_t inval_cv;	/* signalled when inval_pending drops */
	/* changes behind the mount found (STAMP_CHANGED): writeback tells
	 * a conflict with its dirty data by it (hotfs/wb.h) */
	uint32_t behind;
};

/* The cache's (hotfs/cache_write.h, hotfs/cache_insert.h): the writes
 * through the mount in flight and what the store may hold of the
 * file. */
struct ino_cached {
	uint64_t write_gen;		/* bumped by every write/truncate */
	/* Writes through the mount in flight (cache_write_begin to
	 * cache_write_end), each with the extents it may touch
	 * (hotfs/cache_write.h).  A read of those extents is not served
	 * from the store meanwhile: its copy may predate a write that has
	 * landed on the source.  Each write drops the records it touched
	 * when it ends, whatever stamp they were carried to meanwhile. */
	unsigned wr_inflight;
	struct cache_wr *wr_list;
	/* the stamp the store's records of the file are filed under while
	 * writes are in flight (wr_base_ok): the source's as the first of
	 * them found it, then as each one that ended found it (they are
	 * carried over to it).  A read meanwhile looks them up under it:
	 * the source's own stamp may show writes still in flight, and a
	 * lookup under another stamp would drop every record of the file. */
	struct hotfs_stamp wr_base;
	bool wr_base_ok;
	/* The last writes through the mount, for promotions queued before
	 * them (hotfs/cache_insert.h); NULL until the first write to the
	 * file while it is larger than one extent (about 700 bytes).
	 * Under m. */
	struct hotfs_wr_notes *wr_notes;
	/* Extents of this file that may be in the store, as a count from
	 * extent 0 (0 = none): a write invalidates that many.  Unknown after
	 * a restart, so it starts at "the whole file". */
	uint64_t cached_extents_hint;
};

/* The file operations' (hotfs/fop.h): the file's open handles.  Under m
 * (inode.c reads n: an open file's descriptor is never closed for the
 * budget; and frees nofh with the inode). */
struct ino_opens {
	unsigned n;			/* open file handles */
	/* among them, those open for writing: while there are any, the
	 * kernel's pages may hold bytes a write(2) put there and has not
	 * yet sent (hotfs/stamp.h, stamp_open_locked) */
	unsigned w;
	/* Passthrough opens (hotfs/passthrough.h) among them, and the
	 * backing id they share (0: none), for the copy of the file at
	 * pt_stamp: the kernel wants every open of an inode to use the one
	 * backing file, or none to (fop_open.c) */
	unsigned pt;
	int backing_id;
	struct hotfs_stamp pt_stamp;
	/* Without open round trips (revalidate=never): the handle all
	 * reads of this file share (struct hotfs_fh, cache.h), made by the
	 * first; freed with the inode by the table's nofh_free. */
	void *nofh;
};

/* The metadata snapshot's (hotfs/meta_fs.h; lazy_parent and lazy_name:
 * inode.c's, which opens the inode by them). */
struct ino_snap {
	/* Made from the metadata snapshot (hotfs/meta_fs.h) without asking
	 * the source: fd is -1 until ino_fd() opens it by name in its
	 * parent, which is held (ino_hold) until then.  Under m. */
	struct hotfs_inode *lazy_parent;
	char *lazy_name;
	/* The snapshot's attributes, answered while fd is -1; the record
	 * (index + 1, 0: none) of the directory it was found in, and for a
	 * directory its own record and whether it is trusted yet. */
	const struct stat *snap_st;
	const char *snap_target;	/* a symlink's */
	_Atomic uint32_t snap_pdir1;
	_Atomic uint32_t snap_dir1;
	_Atomic int snap_state;		/* enum meta_state */
};

/* A directory's caches (listing.c, negcache.c, namecache.c). */
struct ino_dir {
	struct hotfs_listing *listing;	/* the last listing */
	struct hotfs_neg *neg;		/* names found absent */
	struct hotfs_names *names;	/* names found, with their
					 * attributes (namecache.h) */
};

/* The source watch's (hotfs/watch.h). */
struct ino_watch {
	/* the directory's inotify watch (0: not decided yet, -1: not
	 * watched), and whether a change to this object's attributes
	 * raises an event hotfs sees.  Set under m, read without it. */
	_Atomic int wd;
	_Atomic bool covered;
};

struct hotfs_inode {
	_Atomic int fd;			/* O_PATH on the source object, or
					 * -1: see lazy_parent and fh.
					 * Set under m; read it only under
					 * m, or through ino_fd() */
	/* ino_fd() callers using fd now: the fd budget never closes it
	 * under them (inode.c).  Raised under m, dropped by ino_fd_put. */
	_Atomic unsigned fd_users;
	_Atomic bool fd_ref;		/* used since the budget's clock hand
					 * last passed */
	_Atomic bool fd_keep;		/* never closed for the budget: no
					 * file handle, deleted, other mount */
	/* Its file handle (name_to_handle_at), recorded when the budget
	 * first closed its fd: ino_fd reopens it by that.  Set once under
	 * m, freed with the inode. */
	struct file_handle *fh;
	dev_t dev;
	ino_t ino;
	mode_t type;			/* S_IFMT bits */
	uint64_t nlookup;		/* protected by the table lock */
	unsigned holds;			/* protected by the table lock:
					 * background work in flight */
	/* Kept after the kernel forgot it (nlookup == 0): its O_PATH fd
	 * keeps the source's dentry and inode in memory, so that a later
	 * lookup (after drop_caches, or the kernel's own reclaim) costs no
	 * disk read.  LRU, protected by the table lock. */
	bool retained;
	struct hotfs_inode *lru_prev, *lru_next;
	struct hotfs_inode *next;	/* hash chain, protected by table lock */
	/* Retired (ino_retire): lookups no longer find it, a new inode
	 * stands for the source object; this one lives on until the
	 * kernel forgets it. */
	_Atomic bool retired;
	/* Made while a retired inode of the same source object was still
	 * known: when (clock_mono_ns; 0 if not).  Set before the inode is
	 * in the table, read without a lock. */
	int64_t succeeds_ns;

	pthread_mutex_t m;		/* protects the parts below */
	struct ino_stamps sp;		/* stamp.c's */
	struct ino_cached cw;		/* the cache's */
	struct ino_opens op;		/* the file operations' (fop/) */
	struct ino_dir dir;		/* directories: their caches' */

	struct ino_watch watch;		/* the source watch's */

	struct ino_snap snap;		/* the metadata snapshot's */
};

struct hotfs_itable;

int ino_table_new(struct hotfs_itable **tp, int root_fd);
void ino_table_free(struct hotfs_itable *t);
struct hotfs_inode *ino_root(struct hotfs_itable *t);

/*
 * Find or insert the inode for (st->st_dev, st->st_ino) and take n lookup
 * references.  fd is an O_PATH fd on the object; it is consumed (kept or
 * closed).  Returns NULL with errno-style -ENOMEM in *err on failure.
 */
struct hotfs_inode *ino_get(struct hotfs_itable *t, int fd,
			    const struct stat *st, int *err);

/*
 * The inode the table has for (dev, ino) of this type, its lookup count
 * raised (taken back from the retained ones if need be); NULL if it has
 * none.
 */
struct hotfs_inode *ino_get_known(struct hotfs_itable *t, dev_t dev,
				  ino_t ino, mode_t type);

/*
 * The same for an object known only from the metadata snapshot: the
 * inode gets no fd; ino_fd() opens name in parent when one is needed.
 */
struct hotfs_inode *ino_get_lazy(struct hotfs_itable *t,
				 struct hotfs_inode *parent, const char *name,
				 const struct stat *st, int *err);
/*
 * The inode's O_PATH fd, opened now if it has none: by its file handle if
 * the fd budget closed it, else through its parents if it was made
 * lazily.  -errno if that fails: -ENOENT if the name is gone,
 * -ESTALE if it now names another object (the stale hook is called then,
 * with the inode whose name failed, so the snapshot is not trusted
 * again) or if a file whose fd was closed has been deleted since.
 *
 * The fd stays open until ino_fd_put(in): every ino_fd() that returns an
 * fd needs exactly one put, after the last syscall that uses the fd.
 */
int ino_fd(struct hotfs_itable *t, struct hotfs_inode *in);
void ino_fd_put(struct hotfs_inode *in);
/*
 * Known from the metadata snapshot alone (never opened): its snap_st
 * stands for its attributes.  Under in->m.
 */
static inline bool ino_lazy(const struct hotfs_inode *in)
{
	return in->fd < 0 && !in->fh;
}
void ino_set_stale_hook(struct hotfs_itable *t,
			void (*fn)(void *arg, struct hotfs_inode *in),
			void *arg);
/* Called by ino_note_change: the metadata snapshot's (hotfs/meta_fs.h),
 * set before the requests start and cleared after they end. */
void ino_set_change_hook(struct hotfs_itable *t,
			 void (*fn)(void *arg, struct hotfs_inode *in),
			 void *arg);
/* Before a change of in's data or attributes through the mount, from the
 * write paths (the cache's write bracket, writeback's log): the hook. */
void ino_note_change(struct hotfs_itable *t, struct hotfs_inode *in);
/* Like ino_find, but the inode is held (ino_unhold it). */
struct hotfs_inode *ino_find_hold(struct hotfs_itable *t, dev_t dev,
				  ino_t ino);
/* A new generation for a listing (its offsets carry it). */
uint32_t listing_next_gen(void);
/* The generation counter now (changes when a listing is made). */
uint32_t listing_next_gen_peek(void);

/*
 * Retire in: no lookup finds it from now on (the next one of its source
 * object makes a new inode, a new node id for the kernel), while the
 * kernel's uses of it go on until it forgets it.  For passthrough
 * (hotfs/fop.h): an open its backing file cannot serve is answered
 * ESTALE, and the kernel's path walk again, with LOOKUP_REVAL, meets the
 * new node.  Not the root.  Any lock may be held.
 */
static inline void ino_retire(struct hotfs_inode *in)
{
	atomic_store(&in->retired, true);
}

/* Drop n lookup references; frees the inode at zero (not the root). */
void ino_forget(struct hotfs_itable *t, struct hotfs_inode *in, uint64_t n);

/*
 * Keep an inode alive for background work (a queued promotion) even if
 * the kernel forgets it meanwhile; ino_unhold frees it if it was the last.
 */
void ino_hold(struct hotfs_itable *t, struct hotfs_inode *in);
void ino_unhold(struct hotfs_itable *t, struct hotfs_inode *in);

/*
 * Keep up to n forgotten inodes (regular files and directories that
 * still have a name) open, least recently forgotten dropped first; 0 (the
 * default) frees them at once.
 */
void ino_set_retain(struct hotfs_itable *t, size_t n);
/*
 * Keep the number of O_PATH fds the table holds at most n (0: no bound):
 * first by letting retained inodes go, least recently forgotten first,
 * then by closing the fds of inodes nothing is using (least recently used
 * first, by a clock), to be reopened by file handle on their next use.
 * Inodes with open handles, background work (holds), the root, deleted
 * files and objects whose filesystem has no file handles keep their fds,
 * so the table can still exceed n by those.
 */
void ino_set_fd_budget(struct hotfs_itable *t, size_t n);
/* O_PATH fds the table holds now; fds closed for the budget and reopened
 * by handle since the start (for stats and tests). */
size_t ino_fds(struct hotfs_itable *t);
uint64_t ino_fd_drops(struct hotfs_itable *t);
uint64_t ino_fd_reopens(struct hotfs_itable *t);
/* Close retained inodes whose file was deleted (so that the source frees
 * its space); cheap, call it every few seconds.  Returns how many. */
size_t ino_sweep(struct hotfs_itable *t);
size_t ino_retained(struct hotfs_itable *t);
/* After an unlink, rmdir or rename over through the mount: close the
 * inode at once if it was retained and has no name left. */
void ino_unretain(struct hotfs_itable *t, dev_t dev, ino_t ino);

/*
 * The inode for (dev, ino) if the table has one, without taking a
 * reference: the result may be freed at any time, so it serves only as
 * the kernel's node id (for a notification, which is harmless if stale).
 */
struct hotfs_inode *ino_find(struct hotfs_itable *t, dev_t dev, ino_t ino);
/* Called for each inode about to be freed. */
void ino_set_free_hook(struct hotfs_itable *t,
		       void (*fn)(void *arg, struct hotfs_inode *in),
		       void *arg);
/* How an inode's nofh is freed with it (set before any inode has one). */
void ino_set_nofh_free(struct hotfs_itable *t, void (*fn)(void *nofh));

/* Number of inodes in the table (for stats and tests). */
size_t ino_count(struct hotfs_itable *t);

static inline int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* Are (mtime_ns, ctime_ns) the times st has?  The one comparison of a
 * recorded stamp's times (stamp.c, negcache.c, dirlist.c). */
static inline bool times_same(int64_t mtime_ns, int64_t ctime_ns,
			      const struct stat *st)
{
	return mtime_ns == ts_ns(&st->st_mtim) &&
	       ctime_ns == ts_ns(&st->st_ctim);
}

#endif
