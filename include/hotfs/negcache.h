/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Negative entries kept by the daemon (src/core/negcache.c): names a lookup
 * found absent, per directory, with the directory's stamp from before
 * that lookup.  A later lookup of such a name in the unchanged directory
 * is answered from memory: git probes .gitattributes in every directory,
 * and once the kernel's caches were dropped each probe would read the
 * directory's blocks from the slow disk.  A change to the directory
 * (through the mount or not) changes its stamp.  Not kept when the
 * directory's stamp is racy (hotfs/stamp.h: it changed within a clock
 * tick of the lookup, where another change could leave it as it was).  Directory listings follow the same rule
 * (hotfs/dirlist.h).  Neither is kept on a remote source
 * (hotfs/srcprobe.h): there a directory's stamp is the lower client's
 * cached copy (sshfs keeps it 20 s), and another client's create does
 * not change it in time.
 *
 * Lock: the directory inode's m, held for the list only.
 */
#ifndef HOTFS_NEGCACHE_H
#define HOTFS_NEGCACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hotfs/inode.h"

/* Is name known absent from dir, whose stamp is st? */
bool neg_hit(struct hotfs_inode *dir, const struct stat *st,
	     const char *name);
/* Remember name absent from dir, stamped st before the lookup. */
void neg_add(struct hotfs_inode *dir, const struct stat *st,
	     const char *name);

#endif
