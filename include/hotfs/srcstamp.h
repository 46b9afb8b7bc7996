/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What names a source file and one version of it: the two types the
 * store files its records under (hotfs/store.h) and the inode keeps
 * (hotfs/inode.h, hotfs/stamp.h), here alone so that neither header
 * needs the other.
 */
#ifndef HOTFS_SRCSTAMP_H
#define HOTFS_SRCSTAMP_H

#include <stdint.h>
#include <sys/stat.h>

#include "hotfs/clock.h"

/* A source file: (st_dev, st_ino). */
struct hotfs_key {
	uint64_t dev;
	uint64_t ino;
};

/* A version of a source file: what a cached extent was read from, what
 * the kernel's pages and attributes go with; any change makes it
 * another. */
struct hotfs_stamp {
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

/* The version of the file st describes. */
static inline void srcstamp_of(const struct stat *st, struct hotfs_stamp *s)
{
	s->ino = (uint64_t)st->st_ino;
	s->size = (uint64_t)st->st_size;
	s->mtime_ns = clock_ts_ns(&st->st_mtim);
	s->ctime_ns = clock_ts_ns(&st->st_ctim);
}

#endif
