/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback mark (wbmark.c): while a cachedir holds dirty data of
 * a source, the source says so, as bcache's backing device knows it has
 * a dirty cache.  A mount of that source with another cachedir, a new
 * one or nocache would show the source's older bytes, and a later mount
 * with the right cachedir would replay the log over whatever was written
 * meanwhile: it is refused (wbmark_check).
 *
 * The mark is the file WBMARK_NAME at the source's root (a file, not an
 * extended attribute: NFS and FUSE sources keep files, not always
 * trusted.* attributes); the mount hides it (no lookup, no listing, no
 * name operation reaches it).  It holds the cachedir's identity (a
 * random UUID in cachedir/WBMARK_ID_NAME, made by its first writeback
 * mount), its path, the host and the time, one "key=value" a line.  Set
 * durably before the first write the log takes during a mount is
 * acknowledged; removed once everything is written to the source and the
 * source synced (a clean unmount, the drain of a leftover log, or a
 * failed log's data all flushed).  An admin who accepts the loss of that
 * data removes it (man/hotfs.8).  So a log holding dirty data for a
 * source with no mark at all (its cachedir having an identity: the log
 * was written by a daemon that sets the mark) is not replayed over it:
 * emptied, said in one line (src/writeback/wb_mark.c, wb_mark_orphans).
 */
#ifndef HOTFS_WBMARK_H
#define HOTFS_WBMARK_H

#include <stddef.h>

#define WBMARK_NAME	".hotfs-dirty"
#define WBMARK_ID_NAME	"wlog.id"
#define WBMARK_ID_LEN	36		/* a UUID's text */

/* cachedir's identity into id (WBMARK_ID_LEN + 1 bytes), made and stored
 * durably first if it has none and create is set: 0 or -errno (-ENOENT:
 * none). */
int wbmark_id(int cachedir_fd, int create, char *id);

/*
 * Before mounting src_fd's source (source: its path) with cachedir (NULL:
 * nocache): 0 if it carries no mark, 1 if the mark names this cachedir,
 * -EBUSY if another (one line in err: which cachedir holds the data, and
 * what to do), or another -errno (the mark unreadable; said in err).
 */
int wbmark_check(int src_fd, const char *source, const char *cachedir,
		 char *err, size_t errlen);

/* Set the mark naming id and cachedir in the source's root directory
 * dir_fd (opened for reading), durably: 0 or -errno. */
int wbmark_set(int dir_fd, const char *id, const char *cachedir);

/* The source synced, then the mark removed durably: 0 (also if there was
 * none) or -errno. */
int wbmark_clear(int dir_fd);

#endif
