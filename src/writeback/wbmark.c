// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback mark on the source and the cachedir's identity it names:
 * see include/hotfs/wbmark.h.  No locks: writeback (wb_state.c) sets
 * and clears it under its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hotfs/wbmark.h"

#define MARK_TMP	WBMARK_NAME ".new"
#define MARK_MAX	4096

/* Write len bytes of buf to dirfd/name (mode) through a temporary name,
 * fsync'd and renamed, the directory fsync'd: 0 or -errno. */
static int write_durable(int dirfd, const char *tmp, const char *name,
			 const char *buf, size_t len, mode_t mode)
{
	int fd, r = 0;

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len)
		r = errno ? -errno : -EIO;
	if (!r && fsync(fd))
		r = -errno;
	close(fd);
	if (!r && renameat(dirfd, tmp, dirfd, name))
		r = -errno;
	if (r) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	return fsync(dirfd) ? -errno : 0;
}

/* The text of dirfd/name (at most len - 1 bytes, NUL-terminated): 0 or
 * -errno. */
static int read_text(int dirfd, const char *name, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

int wbmark_id(int cachedir_fd, int create, char *id)
{
	unsigned char b[16];
	char buf[64];
	int r;

	r = read_text(cachedir_fd, WBMARK_ID_NAME, buf, sizeof(buf));
	if (!r && strlen(buf) >= WBMARK_ID_LEN) {
		memcpy(id, buf, WBMARK_ID_LEN);
		id[WBMARK_ID_LEN] = 0;
		return 0;
	}
	if (!r)
		r = -EUCLEAN;
	if (r != -ENOENT || !create)
		return r;
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return -EIO;
	b[6] = (b[6] & 0x0f) | 0x40;	/* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(id, WBMARK_ID_LEN + 1, "%02x%02x%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
		 b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
	snprintf(buf, sizeof(buf), "%s\n", id);
	return write_durable(cachedir_fd, WBMARK_ID_NAME ".new",
			     WBMARK_ID_NAME, buf, strlen(buf), 0600);
}

/* The value of key in the mark's text (into val, at most len - 1). */
static void field(const char *text, const char *key, char *val, size_t len)
{
	size_t kl = strlen(key);
	const char *p = text;

	snprintf(val, len, "?");
	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, kl) || p[kl] != '=')
			continue;
		p += kl + 1;
		snprintf(val, len, "%.*s", (int)strcspn(p, "\n"), p);
		return;
	}
}

int wbmark_check(int src_fd, const char *source, const char *cachedir,
		 char *err, size_t errlen)
{
	char text[MARK_MAX], id[WBMARK_ID_LEN + 1] = "";
	char mid[64], mdir[1024], host[256], since[64];
	int r, cfd;

	r = read_text(src_fd, WBMARK_NAME, text, sizeof(text));
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "%s/%s: %s", source, WBMARK_NAME,
			 strerror(-r));
		return r;
	}
	field(text, "id", mid, sizeof(mid));
	field(text, "cachedir", mdir, sizeof(mdir));
	field(text, "host", host, sizeof(host));
	field(text, "since", since, sizeof(since));
	if (cachedir) {
		cfd = open(cachedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cfd >= 0) {
			if (wbmark_id(cfd, 0, id) < 0)
				id[0] = 0;
			close(cfd);
		}
		if (id[0] && !strcmp(id, mid))
			return 1;
	}
	snprintf(err, errlen, "%s has data not yet written back, held by the "
		 "writeback cachedir %s (id %s, host %s, since %s), not by "
		 "%s%s: mount with cachedir=%s (its filesystem mounted), or "
		 "remove %s/%s to give that data up", source, mdir, mid, host,
		 since, cachedir ? "this cachedir " : "a mount with nocache",
		 cachedir ? cachedir : "", mdir, source, WBMARK_NAME);
	return -EBUSY;
}

int wbmark_set(int dir_fd, const char *id, const char *cachedir)
{
	char text[MARK_MAX], host[256] = "?", since[64] = "?";
	time_t now = time(NULL);
	struct tm tm;
	int n;

	gethostname(host, sizeof(host) - 1);
	if (gmtime_r(&now, &tm))
		strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(text, sizeof(text), "# hotfs: this source has data not "
		     "yet written back, held by the writeback cachedir below "
		     "(man hotfs, WRITEBACK)\nid=%s\ncachedir=%s\nhost=%s\n"
		     "since=%s\n", id, cachedir, host, since);
	if (n < 0 || n >= (int)sizeof(text))
		return -ENAMETOOLONG;
	return write_durable(dir_fd, MARK_TMP, WBMARK_NAME, text, (size_t)n,
			     0644);
}

int wbmark_clear(int dir_fd)
{
	if (syncfs(dir_fd))
		return -errno;
	if (unlinkat(dir_fd, WBMARK_NAME, 0) && errno != ENOENT)
		return -errno;
	return fsync(dir_fd) ? -errno : 0;
}
