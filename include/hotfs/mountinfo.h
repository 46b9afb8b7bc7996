/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading /proc/self/mountinfo (proc(5)): the daemon looks up its own
 * mount's device there, hotfsctl the hotfs mount a path is on.
 */
#ifndef HOTFS_MOUNTINFO_H
#define HOTFS_MOUNTINFO_H

#include <stddef.h>
#include <stdio.h>

struct mountinfo_ent {
	unsigned major, minor;	/* the mount's device */
	char *mnt;		/* its mount point, unescaped */
	char *fstype;		/* "ext4", "fuse.hotfs", ... */
};

/*
 * The next entry of mountinfo-format stream f: 1 and *e, whose strings
 * point into *line (a getline buffer of capacity *cap, NULL and 0 at
 * first; free it at the end); 0 at the end of the stream.  Lines that do
 * not parse are skipped.
 */
int mountinfo_next(FILE *f, char **line, size_t *cap,
		   struct mountinfo_ent *e);

#endif
