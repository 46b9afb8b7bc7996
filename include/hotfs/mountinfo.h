/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading /proc/self/mountinfo (proc(5)): the daemon looks up its own
 * mount's device there, and what the source's mounts forbid; hotfsctl
 * the hotfs mount a path is on.
 */
#ifndef HOTFS_MOUNTINFO_H
#define HOTFS_MOUNTINFO_H

#include <stddef.h>
#include <stdio.h>

struct mountinfo_ent {
	unsigned major, minor;	/* the mount's device */
	char *mnt;		/* its mount point, unescaped */
	char *opts;		/* the mount's own options: "rw,nosuid,..." */
	char *fstype;		/* "ext4", "fuse.hotfs", ... */
	const char *super;	/* the superblock's options, or "" */
};

/*
 * The next entry of mountinfo-format stream f: 1 and *e, whose strings
 * point into *line (a getline buffer of capacity *cap, NULL and 0 at
 * first; free it at the end); 0 at the end of the stream.  Lines that do
 * not parse are skipped.
 */
int mountinfo_next(FILE *f, char **line, size_t *cap,
		   struct mountinfo_ent *e);

/*
 * What the mounts a tree spans forbid, from mountinfo-format stream f:
 * the ST_NOSUID, ST_NODEV and ST_NOEXEC of the mount dir (canonical) is
 * on and of every mount below it (a tree crosses into them), and
 * ST_RDONLY of the mount dir is on.  A mount of hotfs must never grant
 * more than these (main.c applies them to the FUSE mount).  -ENOENT
 * when no mount holds dir.
 */
long mountinfo_forbids(FILE *f, const char *dir);

/*
 * Has a filesystem of device major:minor gone read-only, by the
 * mountinfo-format stream f: its superblock's options say "ro", or
 * "emergency_ro" (ext4 after an error with errors=remount-ro: statvfs
 * does not say so).  1, 0, or -ENOENT when no mount has that device.
 */
int mountinfo_dev_ro(FILE *f, unsigned major, unsigned minor);
/* The same from /proc/self/mountinfo. */
int mountinfo_self_dev_ro(unsigned major, unsigned minor);

#endif
