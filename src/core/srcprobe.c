// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Probing the source: are its inode numbers kept across mounts, how fine
 * are its timestamps (see include/hotfs/srcprobe.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "hotfs/fileio.h"
#include "hotfs/inode.h"
#include "hotfs/srcprobe.h"

/* until probed (unit tests): a local source with fine stamps */
struct hotfs_srcinfo hotfs_src = {
	.ids_kept = true,
	.gran_ns = 1,
};

#define FUSE_MAGIC	0x65735546L

bool srcprobe_fs_remote(long type)
{
	switch ((unsigned long)type) {
	case 0x6969:		/* NFS */
	case 0x517B:		/* SMB */
	case 0xFE534D42:	/* SMB2 */
	case 0xFF534D42:	/* CIFS */
	case 0x65735546:	/* FUSE */
	case 0x01021997:	/* 9P */
	case 0x00C36400:	/* Ceph */
	case 0x5346414F:	/* AFS */
	case 0x6B414653:	/* kAFS */
	case 0x73757245:	/* Coda */
	case 0x7461636F:	/* OCFS2 */
	case 0x01161970:	/* GFS2 */
	case 0x47504653:	/* GPFS */
	case 0x19830326:	/* Lustre */
		return true;
	}
	return false;
}

int64_t srcprobe_granularity(const int64_t *ts, size_t n)
{
	static const int64_t units[] = {
		2000000000LL, 1000000000LL, 100000000LL, 10000000LL,
		1000000LL, 1000LL,
	};
	size_t i, j, used = 0;

	for (i = 0; i < n; i++)
		used += ts[i] != 0;
	if (!used)
		return units[0];
	for (j = 0; j < sizeof(units) / sizeof(units[0]); j++) {
		for (i = 0; i < n; i++)
			if (ts[i] && ts[i] % units[j])
				break;
		if (i == n)
			return units[j];
	}
	return 1;
}

int srcprobe_stat_sync(int fd, struct stat *st)
{
	struct statx x;

	if (!hotfs_src.remote ||
	    statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW |
		  AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &x) == -1) {
		if (fstatat(fd, "", st, AT_EMPTY_PATH |
			    AT_SYMLINK_NOFOLLOW) == -1)
			return -errno;
		return 0;
	}
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	st->st_ino = x.stx_ino;
	st->st_mode = x.stx_mode;
	st->st_nlink = x.stx_nlink;
	st->st_uid = x.stx_uid;
	st->st_gid = x.stx_gid;
	st->st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
	st->st_size = (off_t)x.stx_size;
	st->st_blksize = x.stx_blksize;
	st->st_blocks = (blkcnt_t)x.stx_blocks;
	st->st_atim.tv_sec = x.stx_atime.tv_sec;
	st->st_atim.tv_nsec = x.stx_atime.tv_nsec;
	st->st_mtim.tv_sec = x.stx_mtime.tv_sec;
	st->st_mtim.tv_nsec = x.stx_mtime.tv_nsec;
	st->st_ctim.tv_sec = x.stx_ctime.tv_sec;
	st->st_ctim.tv_nsec = x.stx_ctime.tv_nsec;
	return 0;
}

int srcprobe_check(int root_fd, const char *text, size_t len,
		   unsigned *found, char *why, size_t whylen)
{
	const char *lines[PROBE_NAMES];
	const char *p = text, *end = text + len;
	unsigned n = 0, bad = 0;
	char name[NAME_MAX + 1];
	struct stat st;

	*found = 0;
	while (p < end && n < PROBE_NAMES) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break;
		lines[n++] = p;
		p = nl + 1;
	}
	while (n-- > 0) {
		const char *l = lines[n], *nl;
		unsigned long long ino;
		long long mt, ct;
		char line[NAME_MAX + 72];
		int off = -1;

		nl = memchr(l, '\n', (size_t)(end - l));
		if ((size_t)(nl - l) >= sizeof(line))
			continue;
		memcpy(line, l, (size_t)(nl - l));
		line[nl - l] = '\0';
		if (sscanf(line, "%llu %lld %lld %n", &ino, &mt, &ct,
			   &off) != 3 || off <= 0 || !line[off] ||
		    strlen(line + off) > NAME_MAX)
			continue;
		strcpy(name, line + off);
		if (strchr(name, '/') || !strcmp(name, ".") ||
		    !strcmp(name, ".."))
			continue;
		if (fstatat(root_fd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		/* replaced or changed since (a new file under the name):
		 * says nothing about the numbering */
		if (ts_ns(&st.st_mtim) != mt || ts_ns(&st.st_ctim) != ct)
			continue;
		(*found)++;
		if ((unsigned long long)st.st_ino != ino && !bad++)
			snprintf(why, whylen, "'%s' was inode %llu, now %llu",
				 name, ino, (unsigned long long)st.st_ino);
	}
	if (bad)
		return 0;
	return *found ? 1 : -ENOENT;
}

static int read_sample(int dirfd, char *buf, size_t size, size_t *len)
{
	ssize_t n;
	int fd;

	*len = 0;
	fd = openat(dirfd, PROBE_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return -errno;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -errno;
	*len = (size_t)n;
	return 0;
}

static void add_stamp(int64_t *ts, unsigned *n, const struct stat *st)
{
	if (*n + 2 > PROBE_STAMPS * 2)
		return;
	ts[(*n)++] = ts_ns(&st->st_mtim);
	ts[(*n)++] = ts_ns(&st->st_ctim);
}

int srcprobe_run(int root_fd, int dirfd, struct hotfs_srcinfo *si)
{
	int64_t ts[PROBE_STAMPS * 2];
	char old[PROBE_NAMES * (NAME_MAX + 72)];
	char *sample = NULL;
	size_t oldlen = 0, slen = 0;
	unsigned nts = 0, names = 0;
	struct statfs sfs;
	struct dirent *de;
	struct stat st;
	DIR *dp = NULL;
	int fd, r;

	memset(si, 0, sizeof(*si));
	si->gran_ns = 2000000000LL;
	if (fstatfs(root_fd, &sfs) == -1 ||
	    fstatat(root_fd, "", &st, AT_EMPTY_PATH) == -1) {
		snprintf(si->why, sizeof(si->why), "the source: %s",
			 strerror(errno));
		return -errno;
	}
	si->remote = srcprobe_fs_remote(sfs.f_type);
	si->ids_kept = true;
	add_stamp(ts, &nts, &st);

	/* the last run's names first, before anything else looks names up
	 * (a source numbering in lookup order then shows it) */
	if (dirfd >= 0 &&
	    read_sample(dirfd, old, sizeof(old), &oldlen) == 0) {
		r = srcprobe_check(root_fd, old, oldlen, &si->checked,
				   si->why, sizeof(si->why));
		if (r == 0)
			si->ids_kept = false;
	}
	if (sfs.f_type == FUSE_MAGIC) {
		si->ids_kept = false;
		snprintf(si->why, sizeof(si->why), "a FUSE source: its "
			 "daemon numbers the inodes");
	}

	/* a new sample, and stamps for the clock */
	sample = malloc(sizeof(old));
	fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		dp = fdopendir(fd);
		if (!dp)
			close(fd);
	}
	while (dp && sample && nts < PROBE_STAMPS * 2 &&
	       (de = readdir(dp)) != NULL) {
		size_t nl = strlen(de->d_name);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(root_fd, de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		add_stamp(ts, &nts, &st);
		if (names < PROBE_NAMES &&
		    slen + nl + 72 <= sizeof(old) &&
		    !memchr(de->d_name, '\n', nl)) {
			slen += (size_t)snprintf(sample + slen,
						 sizeof(old) - slen,
						 "%llu %lld %lld %s\n",
						 (unsigned long long)st.st_ino,
						 (long long)ts_ns(&st.st_mtim),
						 (long long)ts_ns(&st.st_ctim),
						 de->d_name);
			names++;
		}
	}
	if (dp)
		closedir(dp);
	/* kept for srcprobe_save: the cachedir is written only once the
	 * store is known to be usable */
	if (sample && names) {
		si->sample = sample;
		si->sample_len = slen;
	} else {
		free(sample);
	}
	si->nstamps = nts;
	si->gran_ns = srcprobe_granularity(ts, nts);
	return 0;
}

int srcprobe_save(int dirfd, struct hotfs_srcinfo *si)
{
	int r = 0;

	if (dirfd >= 0 && si->sample)
		r = file_replace_at(dirfd, PROBE_FILE, si->sample,
				    si->sample_len);
	free(si->sample);
	si->sample = NULL;
	si->sample_len = 0;
	return r;
}
