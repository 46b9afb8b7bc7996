/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metadata snapshot in the daemon (the file: hotfs/meta.h).
 *
 * At mount, cachedir/meta is read and kept in memory, read-only, until
 * unmount.  A directory whose record is there is answered from it --
 * lookups (absent names too), getattr of what they find, readdir(plus)
 * -- once it is trusted: at once with revalidate=never, after one
 * fstat of the directory against the record's stamp otherwise.  Inodes
 * made from it get no source fd until an operation needs one (ino_fd).
 * Anything that does not match drops the record: from then on the
 * directory is the source's, as without a snapshot.
 *
 * Changes through the mount drop the records they touch (the directory
 * for a name created, removed or renamed; the directory a file was
 * found in for a write or setattr of it) and, before the change is
 * made, delete the file on disk if it was current: a crash then finds no
 * snapshot rather than a stale one.  The file is written again at
 * unmount and every -o snapshot_interval seconds (HOTFS_SNAPSHOT_SECS by
 * default) while something changed, from the live listings (each entry
 * stat'ed) and the records still trusted.
 */
#ifndef HOTFS_META_FS_H
#define HOTFS_META_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "hotfs/inode.h"

enum meta_state {
	META_ST_NONE = 0,		/* no record, or dropped */
	META_ST_UNCHECKED,		/* stamp not compared yet */
	META_ST_TRUSTED,
};

struct hotfs;
struct hotfs_meta;

struct meta_fs_stats {
	uint64_t dirs;			/* records loaded */
	uint64_t hits;			/* answers from the snapshot */
	uint64_t stale;			/* records the source contradicted */
	uint64_t dropped;		/* records dropped by changes */
	uint64_t rejected;		/* damaged or foreign files ignored */
	uint64_t saves;			/* files written */
	uint64_t saved_dirs;		/* directories in the last one */
	uint64_t current;		/* 1: the file holds every change */
};

/* Load the snapshot (never fails the mount: a bad one is ignored). */
void meta_fs_open(struct hotfs *fs);
/* The periodic writer. */
int meta_fs_start(struct hotfs *fs);
/* Stop the writer, write the snapshot a last time, free it. */
void meta_fs_close(struct hotfs *fs);

/* 1: answered (e filled, or *err), 0: ask the source. */
int meta_fs_lookup(struct hotfs *fs, struct hotfs_inode *dir,
		   const char *name, struct fuse_entry_param *e, int *err);
/* A directory found through the source: attach its record if any. */
void meta_fs_attach(struct hotfs *fs, struct hotfs_inode *dir);
/* Attributes of an inode without an fd, from the snapshot. */
bool meta_fs_getattr(struct hotfs *fs, struct hotfs_inode *in,
		     struct stat *st);
/* A symlink's target (without an fd), from the snapshot, or NULL. */
const char *meta_fs_readlink(struct hotfs *fs, struct hotfs_inode *in);
/* A referenced listing of a trusted directory for a readdir at off. */
struct hotfs_listing *meta_fs_listing(struct hotfs *fs,
				      struct hotfs_inode *dir, off_t off);
/* Before a change through the mount of dir's names (dir may be NULL), or
 * of in's attributes or data (in may be NULL). */
void meta_fs_change(struct hotfs *fs, struct hotfs_inode *dir,
		    struct hotfs_inode *in);
/* (The write paths, without the fs at hand, note theirs through the
 * inode table: ino_note_change.) */
/*
 * Regular files the mount is to change on the source before anything may
 * look them up (those whose dirty data a replayed writeback log holds:
 * the flush then has no inode to note the change by); changing(arg, st)
 * says which of the snapshot's entries.  The records of the directories
 * that list one are dropped, and the file on disk deleted, as for a
 * change through the mount.  After meta_fs_open, before the mount
 * answers anything.
 */
void meta_fs_drop_changing(struct hotfs *fs,
			   bool (*changing)(void *arg, const struct stat *st),
			   void *arg);
void meta_fs_get_stats(struct hotfs *fs, struct meta_fs_stats *s);

#endif
