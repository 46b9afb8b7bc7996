// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kernel's read-ahead for files of the mount (see include/hotfs/bdi.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hotfs/bdi.h"

/* Undo mountinfo's octal escapes (\040 for a space...) in place. */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

int bdi_mountinfo_dev(FILE *f, const char *mountpoint, dev_t *dev)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE ..."; the
	 * last match is the mount on top */
	while (getline(&line, &cap, f) != -1) {
		char *save = NULL, *tok, *mnt = NULL, *type = NULL;
		unsigned maj = 0, min = 0, i;
		bool ok = true, sep = false;

		for (i = 0, tok = strtok_r(line, " \n", &save); tok;
		     i++, tok = strtok_r(NULL, " \n", &save)) {
			if (i == 2 && sscanf(tok, "%u:%u", &maj, &min) != 2)
				ok = false;
			if (i == 4)
				mnt = tok;
			if (sep) {
				type = tok;
				break;
			}
			if (i >= 6 && strcmp(tok, "-") == 0)
				sep = true;
		}
		if (!ok || !mnt || !type)
			continue;
		unescape(mnt);
		if (strcmp(mnt, mountpoint) != 0 ||
		    (strcmp(type, "fuse") != 0 && strncmp(type, "fuse.", 5) != 0))
			continue;
		*dev = makedev(maj, min);
		found = true;
	}
	free(line);
	return found ? 0 : -ENOENT;
}

int bdi_mount_dev(const char *mountpoint, dev_t *dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r;

	if (!f)
		return -errno;
	r = bdi_mountinfo_dev(f, mountpoint, dev);
	fclose(f);
	return r;
}

static int ra_path(char *buf, size_t len, const char *sysfs, dev_t dev)
{
	int n = snprintf(buf, len, "%s/class/bdi/%u:%u/read_ahead_kb", sysfs,
			 major(dev), minor(dev));

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int bdi_set_read_ahead(const char *sysfs, dev_t dev, uint64_t bytes,
		       char *why, size_t whylen)
{
	char path[256], val[32];
	int fd, n, r;

	r = ra_path(path, sizeof(path), sysfs, dev);
	if (r < 0) {
		snprintf(why, whylen, "path too long");
		return r;
	}
	n = snprintf(val, sizeof(val), "%" PRIu64 "\n", bytes / 1024);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd == -1) {
		r = -errno;
		snprintf(why, whylen, "%s: %s", path, strerror(-r));
		return r;
	}
	r = 0;
	if (write(fd, val, (size_t)n) != n)
		r = errno ? -errno : -EIO;
	if (close(fd) == -1 && !r)
		r = -errno;
	if (r < 0)
		snprintf(why, whylen, "%s: %s", path, strerror(-r));
	return r;
}

int bdi_get_read_ahead(const char *sysfs, dev_t dev, uint64_t *bytes)
{
	char path[256], val[32], *end;
	unsigned long long kb;
	ssize_t n;
	int fd, r;

	r = ra_path(path, sizeof(path), sysfs, dev);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	n = read(fd, val, sizeof(val) - 1);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	val[n] = '\0';
	errno = 0;
	kb = strtoull(val, &end, 10);
	if (errno || end == val || (*end && *end != '\n'))
		return -EINVAL;
	*bytes = (uint64_t)kb * 1024;
	return 0;
}
