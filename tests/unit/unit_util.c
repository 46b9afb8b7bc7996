// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the unit tests share (see unit_util.h).
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit_util.h"

char *ut_tmpdir(const char *tag, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "/tmp/hotfs-%s-XXXXXX", tag) >= len)
		return NULL;
	return mkdtemp(buf);
}

uint64_t ut_rnd(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static int rm_one(const char *path, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

int ut_rm_tree(const char *dir)
{
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int ut_dir_with_file(const char *tag, char *dir, size_t len,
		     const char *name, const void *data, size_t size)
{
	int dfd, fd, ok;

	if (!ut_tmpdir(tag, dir, len))
		return -1;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ok = data ? write(fd, data, size) == (ssize_t)size :
		    ftruncate(fd, (off_t)size) == 0;
	close(fd);
	return ok ? dfd : -1;
}

struct hotfs_inode *ut_inode(struct hotfs_itable *t, int dfd,
			     const char *name, struct stat *st)
{
	int fd = openat(dfd, name, O_PATH | O_CLOEXEC), err;

	if (fd < 0 || fstat(fd, st) != 0)
		return NULL;
	return ino_get(t, fd, st, &err);
}
