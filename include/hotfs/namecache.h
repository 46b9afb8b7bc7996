/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Names found through the source, kept per directory with the attributes
 * the source gave (src/core/namecache.c), for revalidate=N: a lookup of a name
 * the source answered less than N seconds ago is answered from memory
 * (with the inode hotfs still has for it) as long as nothing changed
 * through the mount since.  The kernel keeps names and attributes N
 * seconds already; this keeps them past its own caches (drop_caches,
 * reclaim), so that a tree walked again within N seconds costs the
 * source no lookup (over sshfs, two round trips to its daemon a name).
 *
 * Changes through the mount: every request that may change a name or
 * attributes (setattr, create, unlink, rename, write, ...) moves the
 * change generation before it starts and after it ends (hotfs/fop.h);
 * what was learnt under another generation is not used.  Coarse (any
 * write drops every name), and never stale: a lookup that overlapped a
 * change is not kept.  Changes behind the mount are seen once the N
 * seconds are over, as the kernel's own caches see them.
 *
 * Lock: the directory inode's m, for its table only.  The byte count
 * and the generation are atomics.
 */
#ifndef HOTFS_NAMECACHE_H
#define HOTFS_NAMECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hotfs/inode.h"

/* What all directories' tables may use together. */
#define NC_MAX_BYTES	(64u << 20)

/* The mount's change generation, read before asking the source. */
uint64_t nc_gen(void);
/* Before and after a change through the mount. */
void nc_changed(void);
/*
 * Remember that name in dir is the object of *st, as the source said at
 * now_ns (CLOCK_MONOTONIC) under generation gen (nc_gen before asking).
 */
void nc_add(struct hotfs_inode *dir, const char *name, const struct stat *st,
	    uint64_t gen, int64_t now_ns);
/*
 * The attributes of name in dir into *st, if the source gave them less
 * than max_ns before now_ns and the generation is still gen.
 */
bool nc_get(struct hotfs_inode *dir, const char *name, uint64_t gen,
	    int64_t now_ns, int64_t max_ns, struct stat *st);
/* Forget name in dir (the object it led to is not ours any more). */
void nc_forget(struct hotfs_inode *dir, const char *name);
void nc_free(struct hotfs_names *nc);
/* Names dir's table holds (of any generation). */
size_t nc_count(struct hotfs_inode *dir);
/* Bytes all tables use. */
size_t nc_bytes(void);

#endif
