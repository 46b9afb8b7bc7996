/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Directory listings kept in memory (src/core/dirlist.c), for the FUSE
 * layer's directory handlers (src/fuse/fuse_dir.c).  A listing (struct
 * hotfs_listing, hotfs/inode.h) is the names of a directory as read from
 * the source, with the directory's stamp (mtime, ctime, size) from before
 * the read; it is served again while the stamp is unchanged, and never
 * kept when the stamp is racy (hotfs/negcache.h).
 *
 * On a remote source (hotfs/srcprobe.h) a directory's stamp is the lower
 * client's cached copy and proves nothing: there listings are kept only
 * with revalidate=N, and trusted by time instead, for N seconds from the
 * opendir that read them while nothing changed through the mount (the
 * name cache's change generation, hotfs/namecache.h); an opendir then
 * costs the source nothing.
 *
 * Locks: the directory inode's m around its listing pointer;
 * transient_lock (a leaf) around the ring of handle-less listings.
 */
#ifndef HOTFS_DIRLIST_H
#define HOTFS_DIRLIST_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hotfs/fs.h"
#include "hotfs/inode.h"

/*
 * An open directory.  It is read either from the source (dp; offsets are
 * the source's d_off) or, when the directory's last listing is still
 * current, from that listing (lst; offsets are entry indices + 1), never
 * both.  Read from the source from start to end without a seek, it
 * records a new listing.
 */
struct hotfs_dirp {
	DIR *dp;
	struct hotfs_inode *in;
	struct dirent *entry;		/* read from dp, not yet returned */
	off_t offset;
	struct hotfs_listing *lst;	/* serving from this, or NULL */
	uint64_t gen_tag;		/* handle-less: lst->gen << 32 */
	/* the directory's stamp at opendir; a remote source's: when it
	 * began, and the change generation then */
	int64_t mtime_ns, ctime_ns;
	off_t size;
	/* CLOCK_REALTIME just before that stamp was taken: the racy rule
	 * holds from there, not from when the reading ended (a reader
	 * held up past the window would take a change made in the stamp's
	 * tick, after it, for none) */
	int64_t stamp_ns;
	int64_t open_ns;
	uint64_t nc_gen;
	/* recording (dp mode) */
	bool rec;
	struct hotfs_lent *rents;	/* names as offsets into rnames */
	size_t rn, rcap;
	char *rnames;
	size_t rnlen, rncap;
	struct hotfs_dirp *prev, *next;	/* among the open ones */
};

/*
 * An open directory's state (opendir to releasedir), and its end.  The
 * open ones are kept in a list and freed by dir_free_all at exit: when
 * the kernel unmounts it ends the background requests still queued
 * (a releasedir sent as a lister closed the directory just before)
 * without sending them.  NULL if out of memory.
 */
struct hotfs_dirp *dirp_new(struct hotfs_inode *in);
void dirp_free(struct hotfs_dirp *d);
/* How many are open now. */
size_t dirp_open_count(void);

/* Is l the directory's current listing, by its stamp st? */
bool listing_fresh(const struct hotfs_listing *l, const struct stat *st);
/* At opendir (fd: the directory's): serve d from the last listing if
 * the directory has not changed since, else record a new one (by time:
 * record, the caller having found no listing_trusted). */
void listing_open(struct hotfs *fs, struct hotfs_dirp *d, int fd);
/* A remote source's directory: its listing, referenced, if trusted by
 * time (see above); NULL otherwise. */
struct hotfs_listing *listing_trusted(struct hotfs *fs,
				      struct hotfs_inode *in);
/* Recording: an entry read from the source; give up; the whole
 * directory was read (keep the listing). */
void rec_add(struct hotfs_dirp *d, const struct dirent *de);
void rec_stop(struct hotfs_dirp *d);
void rec_done(struct hotfs_dirp *d);
/*
 * The listing a handle-less readdir at off is answered from, referenced
 * (listing_put); NULL with -errno in *err.
 */
struct hotfs_listing *stateless_listing(struct hotfs *fs,
					struct hotfs_inode *in, off_t off,
					int *err);
/* Free what handle-less directory reads keep, and the directories still
 * open (at exit). */
void dir_free_all(void);

#endif
