/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the metadata snapshot in the daemon: meta_fs.c answers from
 * it (lookups, attributes, listings, and its life cycle), meta_save.c
 * writes it (the writer thread, at unmount).  The helpers both use are
 * inline here, so that meta_save.c calls nothing of meta_fs.c.
 *
 * Locks: m->lock (the on-disk file's state), m->stop_lock (the writer's
 * stop), both leaves.
 */
#ifndef HOTFS_META_FS_I_H
#define HOTFS_META_FS_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "hotfs/fs.h"
#include "hotfs/meta.h"

struct byid {
	dev_t dev;
	ino_t ino;
	uint32_t idx;
};

struct hotfs_meta {
	struct hotfs *fs;
	int dirfd;			/* the cachedir */
	struct meta_snap *snap;		/* NULL: none loaded */
	_Atomic unsigned char *dropped;	/* per record */
	struct byid *byid;		/* records by (dev, ino) */
	/* the file on disk: current (no change since it was written)? */
	pthread_mutex_t lock;
	uint64_t change_gen;		/* under lock */
	bool clean;			/* under lock */
	_Atomic uint64_t listing_seen, inodes_seen;
	_Atomic uint64_t hits, stale, ndropped, rejected, saves, saved_dirs;
	/* the saver's own: how long until the directories it left out as
	 * changed too recently can be read (0: none left out) */
	int64_t racy_wait_ns;
	/* the writer */
	pthread_t thr;
	bool started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stop;
};

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static inline int cmp_byid(const void *a, const void *b)
{
	const struct byid *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* The record of directory (dev, ino), or META_NONE. */
static inline uint32_t find_byid(struct hotfs_meta *m, dev_t dev, ino_t ino)
{
	struct byid key = { .dev = dev, .ino = ino }, *r;

	if (!m->snap || !m->snap->ndirs)
		return META_NONE;
	r = bsearch(&key, m->byid, m->snap->ndirs, sizeof(key), cmp_byid);
	return r ? r->idx : META_NONE;
}

static inline bool same_stamp(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       ts_ns(&a->st_mtim) == ts_ns(&b->st_mtim) &&
	       ts_ns(&a->st_ctim) == ts_ns(&b->st_ctim) &&
	       (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT);
}

/* meta_save.c: start the writer; stop it and write the snapshot a last
 * time (at unmount). */
int meta_save_start(struct hotfs_meta *m);
void meta_save_close(struct hotfs_meta *m);

#endif
