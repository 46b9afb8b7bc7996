// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback (include/hotfs/wb.h): a file's birth (struct
 * wb_fid), and the walk of the source at mount that finds the files a
 * replayed log holds dirty data of (by inode number; one whose number
 * another file has taken since is dropped, one changed outside the mount
 * has the source's version kept aside first: src/writeback/wb_mark.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/log.h"
#include "hotfs/wblog.h"
#include "wb_i.h"

uint64_t wb_birth_of(int dfd, const char *path, int flags,
		     int (*open_rd)(int dfd, const char *path, void *arg),
		     void *arg)
{
	struct statx x;
	unsigned int gen;
	uint64_t b;
	int fd, r;

	if (!statx(dfd, path, flags | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &x) &&
	    (x.stx_mask & STATX_BTIME)) {
		b = (uint64_t)x.stx_btime.tv_sec * 1000000000u +
		    x.stx_btime.tv_nsec;
		if (b & ~WB_BIRTH_GEN)
			return b & ~WB_BIRTH_GEN;
	}
	fd = open_rd(dfd, path, arg);
	if (fd < 0)
		return 0;
	r = ioctl(fd, FS_IOC_GETVERSION, &gen);
	close(fd);
	return r ? 0 : WB_BIRTH_GEN | gen;
}

/* open_rd for birth_of: a path of the source */
static int open_rd_path(int dfd, const char *path, void *arg)
{
	(void)arg;
	return openat(dfd, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
		      O_NOCTTY | O_CLOEXEC);
}

/* the walk that finds the files of a replayed log (nftw has no argument:
 * it runs once, at mount, before any thread) */
static struct {
	struct hotfs_wb *wb;
	struct wb_fid *fids;
	bool *found;
	size_t n, left;
} walk;

/*
 * Did the file at path (st: its stat) change after dirty_ns, its newest
 * dirty write in the log?  Its ctime says so, unless it is still its
 * birth time: a file that never changed since it was made (the mount's
 * own create, whose ctime on the source's fine clock may pass its first
 * record's on the log's coarse one by up to a tick) has no change
 * behind the mount (any would have moved its ctime past its birth; a
 * file made since with the logged one's number was dropped above).
 */
static bool changed_since(const char *path, const struct stat *st,
			  int64_t dirty_ns)
{
	struct statx x;

	if ((int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec <=
	    dirty_ns)
		return false;
	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW,
		     STATX_BTIME | STATX_CTIME, &x) ||
	       !(x.stx_mask & STATX_BTIME) ||
	       x.stx_btime.tv_sec != x.stx_ctime.tv_sec ||
	       x.stx_btime.tv_nsec != x.stx_ctime.tv_nsec;
}

static int walk_one(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	struct wb_fdent *e;
	uint64_t birth;
	int64_t n;
	size_t i;
	int fd;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode) ||
	    st->st_dev != walk.wb->root_dev)
		return 0;
	for (i = 0; i < walk.n; i++)
		if (!walk.found[i] && walk.fids[i].ino == st->st_ino)
			break;
	if (i == walk.n)
		return 0;
	birth = wb_birth_of(AT_FDCWD, path, 0, open_rd_path, NULL);
	if (wb_births_differ(walk.fids[i].birth, birth)) {
		/* the logged file is gone; this one took its number since */
		n = wblog_drop(walk.wb->wl, &walk.fids[i]);
		hotfs_log(LOG_ERR, "writeback: %s has inode number %llu of "
			  "the log but is another file, made since: the "
			  "%lld dirty bytes logged for the removed one are "
			  "not applied to it (dropped)%s%s\n", path,
			  (unsigned long long)st->st_ino, (long long)
			  (n > 0 ? n : 0), n < 0 ? ": " : "",
			  n < 0 ? strerror((int)-n) : "");
		walk.found[i] = true;
		return --walk.left ? 0 : 1;
	}
	wblog_dirty_info(walk.wb->wl, &walk.fids[i], &n);
	if (n && changed_since(path, st, n))
		wb_keep_outside(walk.wb, path, st, n);
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	e = fd >= 0 ? calloc(1, sizeof(*e)) : NULL;
	if (!e) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	e->ino = (uint64_t)st->st_ino;
	e->birth = birth ? birth : walk.fids[i].birth;
	e->fd = fd;
	*wb_fd_slot(walk.wb, e->ino) = e;
	walk.found[i] = true;
	return --walk.left ? 0 : 1;	/* all found: done */
}

void wb_find_files(struct hotfs_wb *wb, const char *source)
{
	size_t i;

	walk.wb = wb;
	walk.n = wblog_files(wb->wl, &walk.fids);
	if (!walk.fids || !walk.n) {
		free(walk.fids);
		return;
	}
	walk.found = calloc(walk.n, sizeof(*walk.found));
	walk.left = walk.n;
	if (walk.found)
		nftw(source, walk_one, 64, FTW_PHYS | FTW_MOUNT);
	for (i = 0; i < walk.n; i++) {
		if (walk.found && walk.found[i])
			continue;
		hotfs_log(LOG_ERR, "writeback: inode %llu of the log is not "
			  "in the source: its dirty data is dropped\n",
			  (unsigned long long)walk.fids[i].ino);
		wblog_trim(wb->wl, &walk.fids[i], 0);
	}
	hotfs_log(LOG_NOTICE, "writeback: %zu files with dirty data in the "
		  "log\n", walk.n);
	free(walk.found);
	free(walk.fids);
	memset(&walk, 0, sizeof(walk));
}

