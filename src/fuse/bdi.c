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
#include "hotfs/mountinfo.h"

int bdi_mountinfo_dev(FILE *f, const char *mountpoint, dev_t *dev)
{
	struct mountinfo_ent e;
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	/* the last match is the mount on top */
	while (mountinfo_next(f, &line, &cap, &e))
		if (strcmp(e.mnt, mountpoint) == 0 &&
		    (strcmp(e.fstype, "fuse") == 0 ||
		     strncmp(e.fstype, "fuse.", 5) == 0)) {
			*dev = makedev(e.major, e.minor);
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
