// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reading /proc/self/mountinfo (see include/hotfs/mountinfo.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "hotfs/mountinfo.h"

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

int mountinfo_next(FILE *f, char **line, size_t *cap,
		   struct mountinfo_ent *e)
{
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE ..." */
	while (getline(line, cap, f) != -1) {
		char *save = NULL, *tok;
		unsigned i;
		bool ok = true, sep = false;

		unsigned after = 0;	/* fields after the separator */

		e->mnt = e->opts = e->fstype = NULL;
		e->super = "";
		for (i = 0, tok = strtok_r(*line, " \n", &save); tok;
		     i++, tok = strtok_r(NULL, " \n", &save)) {
			if (i == 2 && sscanf(tok, "%u:%u", &e->major,
					     &e->minor) != 2)
				ok = false;
			if (i == 4)
				e->mnt = tok;
			if (i == 5)
				e->opts = tok;
			if (sep) {
				/* FSTYPE SOURCE SUPER-OPTIONS */
				if (after == 0)
					e->fstype = tok;
				else if (after == 2)
					e->super = tok;
				after++;
				continue;
			}
			if (i >= 6 && strcmp(tok, "-") == 0)
				sep = true;
		}
		if (!ok || !e->mnt || !e->opts || !e->fstype)
			continue;
		unescape(e->mnt);
		return 1;
	}
	return 0;
}

/* Is the option opt one of the comma-separated list's? */
static bool has_opt(const char *list, const char *opt)
{
	size_t n = strlen(opt);

	while (*list) {
		if (strncmp(list, opt, n) == 0 &&
		    (list[n] == ',' || list[n] == '\0'))
			return true;
		list = strchr(list, ',');
		if (!list)
			break;
		list++;
	}
	return false;
}

static long forbids(const struct mountinfo_ent *e)
{
	return (has_opt(e->opts, "nosuid") ? ST_NOSUID : 0) |
	       (has_opt(e->opts, "nodev") ? ST_NODEV : 0) |
	       (has_opt(e->opts, "noexec") ? ST_NOEXEC : 0) |
	       (has_opt(e->opts, "ro") || has_opt(e->super, "ro") ?
		ST_RDONLY : 0);
}

/* Where mnt is dir or an ancestor of it: the length of mnt, or -1. */
static long holds(const char *mnt, const char *dir)
{
	size_t n = strlen(mnt);

	if (strcmp(mnt, "/") == 0)
		return 1;
	if (strncmp(dir, mnt, n) == 0 && (dir[n] == '/' || dir[n] == '\0'))
		return (long)n;
	return -1;
}

long mountinfo_forbids(FILE *f, const char *dir)
{
	struct mountinfo_ent e;
	char *line = NULL;
	size_t cap = 0;
	long own = -ENOENT, below = 0, best = -1, n;

	while (mountinfo_next(f, &line, &cap, &e)) {
		n = holds(e.mnt, dir);
		/* the longest mount point holding dir is its mount; of two
		 * on the same point, the later is on top */
		if (n >= best && n >= 0) {
			best = n;
			own = forbids(&e);
		} else if (n < 0 && holds(dir, e.mnt) >= 0) {
			below |= forbids(&e) & ~ST_RDONLY;
		}
	}
	free(line);
	return own < 0 ? own : own | below;
}

int mountinfo_dev_ro(FILE *f, unsigned major, unsigned minor)
{
	struct mountinfo_ent e;
	size_t cap = 0;
	char *line = NULL;
	int r = -ENOENT;

	while (mountinfo_next(f, &line, &cap, &e) == 1) {
		if (e.major != major || e.minor != minor)
			continue;
		r = has_opt(e.super, "ro") || has_opt(e.super, "emergency_ro");
		if (r)
			break;
	}
	free(line);
	return r;
}

int mountinfo_self_dev_ro(unsigned major, unsigned minor)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r;

	if (!f)
		return -errno;
	r = mountinfo_dev_ro(f, major, minor);
	fclose(f);
	return r;
}
