/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metadata snapshot: the attributes and listings of the directories
 * the daemon has listed, kept in cachedir/meta so that a cold start (a
 * remount, a reboot) answers lookups, getattr and readdir of a warm tree
 * without reading the slow tree's metadata.
 *
 * The file, little-endian throughout:
 *
 *   header   magic "HOTFSMD1", u32 version, u32 ndirs, u32 nents,
 *            u32 reserved, u64 payload bytes, the root's stat record
 *   dirs     ndirs records in an order where a parent comes before its
 *            subdirectories, the root first:
 *              u32 parent index (UINT32_MAX: the root), u16 name length,
 *              name (its name in the parent), stat record (the
 *              directory's stamp when its listing was read), u32 entries,
 *              then per entry: u16 name length, name, stat record, and
 *              for a symlink u16 target length, target
 *   trailer  u64 XXH3-64 of everything before it
 *
 * A stat record is 13 u64: dev, ino, mode, nlink, uid, gid, rdev, size,
 * blksize, blocks, atime, mtime, ctime (times in ns): every field the
 * daemon replies with, and the stamp (dev, ino, size, mtime, ctime).
 *
 * Decoding checks everything before anything is trusted: the checksum,
 * every length against the buffer, names (no '/', no "." or ".."), that a
 * directory's record matches its entry in its parent (a directory, same
 * dev and ino), that no entry has two records.  Anything wrong rejects
 * the whole file (-EINVAL): a damaged snapshot costs speed, never
 * correctness.
 */
#ifndef HOTFS_META_H
#define HOTFS_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define META_MAGIC		"HOTFSMD1"
#define META_VERSION		1u
#define META_FILE		"meta"
/* The file (and the memory a loaded one takes) is bounded by this: a
 * snapshot that would be larger keeps the directories found first (the
 * ones nearest the root) and leaves the rest out. */
#define META_MAX_BYTES		(64u << 20)
#define META_NONE		UINT32_MAX

struct meta_ent {
	const char *name;
	struct stat st;
	uint32_t sub;			/* its directory record, or META_NONE */
	const char *target;		/* a symlink's, else NULL */
};

struct meta_dir {
	uint32_t parent;		/* META_NONE for the root */
	const char *name;
	struct stat st;			/* its stamp when listed */
	uint32_t n;
	struct meta_ent *ents;		/* sorted by name */
};

struct meta_snap {
	struct stat root;
	uint32_t ndirs, nents;
	struct meta_dir *dirs;
	struct meta_ent *ents;		/* all entries */
	char *names;			/* all names, NUL-terminated */
	size_t bytes;			/* memory used */
};

/* Decode buf (len bytes).  0, -EINVAL (damaged, foreign or another
 * version) or -ENOMEM. */
int meta_decode(const void *buf, size_t len, struct meta_snap **out);
void meta_snap_free(struct meta_snap *s);
/* The entry name in d, or NULL. */
const struct meta_ent *meta_find(const struct meta_dir *d, const char *name);

/*
 * Building a snapshot: meta_enc_new with the root's stat, then per
 * directory meta_enc_dir (returns its index, or META_NONE when over
 * max_bytes or out of memory: leave its subtree out) followed by its
 * entries, then meta_enc_finish.  Directories must come parent first.
 */
struct meta_enc;
struct meta_enc *meta_enc_new(const struct stat *root, size_t max_bytes);
uint32_t meta_enc_dir(struct meta_enc *e, uint32_t parent, const char *name,
		      const struct stat *st);
/* false when the entry did not fit: the directory is then dropped. */
bool meta_enc_ent(struct meta_enc *e, const char *name, const struct stat *st,
		  const char *target);
/* Finish a directory early (its entries did not all fit): drop it. */
void meta_enc_drop_dir(struct meta_enc *e);
/* The encoded file (malloc'd) and its length; frees e.  -ENOMEM. */
int meta_enc_finish(struct meta_enc *e, void **buf, size_t *len);
void meta_enc_free(struct meta_enc *e);

/* Read dirfd/name whole (at most max bytes: a larger one is -EFBIG).
 * 0, -ENOENT if there is none, or -errno. */
int meta_read_file(int dirfd, const char *name, size_t max, void **buf,
		   size_t *len);

#endif
