/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the unit tests share (tests/unit/unit_util.c): a private
 * temporary directory, made and removed with everything in it.
 */
#ifndef HOTFS_UNIT_UTIL_H
#define HOTFS_UNIT_UTIL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hotfs/clock.h"
#include "hotfs/inode.h"

#define UT_WAIT_NS	(20 * 1000000000LL)	/* for a condition, at most */

/* Poll cond every millisecond until it holds (the test fails if it does
 * not within UT_WAIT_NS); include cmocka.h before. */
#define WAIT_UNTIL(cond)						\
	do {								\
		int64_t until_ = clock_mono_ns() + UT_WAIT_NS;		\
									\
		while (!(cond) && clock_mono_ns() < until_)		\
			poll(NULL, 0, 1);				\
		assert_true(cond);					\
	} while (0)

/* mkdtemp of /tmp/hotfs-TAG-XXXXXX into buf (len bytes); buf, or NULL. */
char *ut_tmpdir(const char *tag, char *buf, size_t len);
/* xorshift64: the next of *state (never 0), for reproducible test data. */
uint64_t ut_rnd(uint64_t *state);
/* Remove dir and everything below it (not following symlinks). */
int ut_rm_tree(const char *dir);
/*
 * A private directory (its path in dir, len bytes) holding the file name
 * with size bytes of data (NULL: zeros); an O_PATH fd on the directory,
 * or -1 (the caller's assert fails).
 */
int ut_dir_with_file(const char *tag, char *dir, size_t len,
		     const char *name, const void *data, size_t size);
/* The table's inode of dfd/name (a lookup counted), its stat in *st. */
struct hotfs_inode *ut_inode(struct hotfs_itable *t, int dfd,
			     const char *name, struct stat *st);

#endif
