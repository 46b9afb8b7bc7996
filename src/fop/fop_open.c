// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Opening a file (hotfs/fop.h): the handle, whether the kernel keeps its
 * pages (the stamp: hotfs/stamp.h), revalidate=N's opens answered
 * without the source, and O_TRUNC in the file's write mode (writeback:
 * the log cut before the source is).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "hotfs/cache_write.h"
#include "hotfs/clock.h"
#include "hotfs/filecopy.h"
#include "hotfs/fileio.h"
#include "hotfs/fop.h"
#include "hotfs/stamp.h"
#include "hotfs/wb.h"

int fop_backing_flags(int flags)
{
	flags &= ~(O_NOFOLLOW | O_DIRECT);
	return flags | O_CLOEXEC;
}

/* Could this open be a passthrough one, as far as the open and the
 * mount go?  Under in->m. */
static bool pt_candidate(struct hotfs *fs, struct hotfs_inode *in,
			 const struct fuse_file_info *fi,
			 const struct fop_backing *bk)
{
	struct hotfs_cache *c = fs_cache(fs);

	return bk && c && c->fc && atomic_load(&fs->passthrough) &&
	       !fop_writes(fi->flags) &&
	       !(fi->flags & O_TRUNC) && in->sp.stamp_valid &&
	       !cache_write_busy_locked(in) && !fop_writeback(fs, in);
}

/*
 * A passthrough open of in at its stamp (see "Passthrough opens" in
 * hotfs/fop.h): 1 if fi got the backing id (the open counted), 0 if the
 * open is to be an ordinary one, -ESTALE if it cannot be either.  Under
 * in->m.
 */
static int pt_open_locked(struct hotfs *fs, struct hotfs_inode *in,
			  struct fuse_file_info *fi,
			  const struct fop_backing *bk)
{
	struct hotfs_cache *c = fs_cache(fs);
	struct hotfs_key key;
	int cfd, id;

	if (!pt_candidate(fs, in, fi, bk) || in->op.n > in->op.pt)
		return in->op.pt ? -ESTALE : 0;
	/* a new node whose retried open may be on its way */
	if (!in->op.pt && in->succeeds_ns &&
	    clock_mono_ns() - in->succeeds_ns < FOP_PT_HOLD_NS)
		return 0;
	if (in->op.backing_id &&
	    cache_stamp_eq(&in->op.pt_stamp, &in->sp.stamp)) {
		id = in->op.backing_id;	/* the copy the others read */
	} else if (in->op.pt) {
		return -ESTALE;		/* they read an older copy */
	} else {
		if (in->op.backing_id) {	/* of an older copy */
			bk->close(bk->arg, in->op.backing_id);
			in->op.backing_id = 0;
		}
		cache_key(c, in->dev, in->ino, &key);
		/* none yet: one is made if the store holds the file */
		cfd = fc_get(c->fc, &key, &in->sp.stamp, true);
		if (cfd < 0)
			return 0;
		id = bk->open(bk->arg, cfd);
		close(cfd);
		if (id <= 0)
			return 0;
		/* an open the kernel did not take left one behind: its
		 * copy is the file's as long as the stamp is the same */
		in->op.backing_id = id;
		in->op.pt_stamp = in->sp.stamp;
	}
	in->op.pt++;
	in->op.n++;
#ifdef FUSE_CAP_PASSTHROUGH	/* else never on: hotfs/passthrough.h */
	fi->backing_id = id;
#endif
	return 1;
}

/*
 * Keep the kernel's page cache if the file is as we last saw it, and
 * answer with the file's copy where it can (passthrough: fh->pt).
 * Returns 1 if it changed behind the mount since (close-to-open then
 * wants the kernel's cached attributes dropped too), 0, or -ESTALE (see
 * "Passthrough opens": the open not counted).
 */
static int settle_open(struct hotfs *fs, struct hotfs_inode *in, int fd,
		       struct fuse_file_info *fi, struct hotfs_fh *fh,
		       const struct fop_backing *bk)
{
	bool keep, changed;
	int pt;

	pthread_mutex_lock(&in->m);
	changed = stamp_open_locked(in, fd,
				    fs->o->revalidate == HOTFS_REVAL_NEVER,
				    in->op.w != 0, &keep);
	pt = atomic_load(&in->retired) ? -ESTALE :
	     pt_open_locked(fs, in, fi, bk);
	if (pt == 0) {
		fi->keep_cache = keep;
		in->op.n++;
		if (fop_writes(fi->flags))
			in->op.w++;
	} else if (pt == 1) {
		/* the kernel's rule: no keep_cache with a backing file */
		fi->keep_cache = 0;
		fh->pt = true;
	} else {
		ino_retire(in);
	}
	pthread_mutex_unlock(&in->m);
	if (pt == 1)
		atomic_fetch_add_explicit(&fs->n_pt_open, 1,
					  memory_order_relaxed);
	if (pt < 0) {
		atomic_fetch_add_explicit(&fs->n_pt_stale, 1,
					  memory_order_relaxed);
		return pt;
	}
	return changed ? 1 : 0;
}

bool fop_stamp_trusted_locked(struct hotfs *fs, struct hotfs_inode *in)
{
	return fs->o->revalidate == HOTFS_REVAL_SECONDS &&
	       stamp_fresh_locked(in,
				  (int64_t)(fs->o->revalidate_secs * 1e9)) &&
	       !cache_write_busy_locked(in);
}

/*
 * revalidate=N: a read-only open of a file whose stamp an open took from
 * the source less than N seconds ago, unchanged since by the mount and
 * settled (hotfs/srcprobe.h), is answered without the source: the
 * kernel keeps its pages, and the handle opens the source file only if
 * a request needs it (fh_source).  A fully cached file read from the
 * kernel's pages then costs the source nothing.  True if so (fi->fh
 * set, the open counted).
 */
static bool open_trusted(struct hotfs *fs, struct hotfs_inode *in,
			 struct fuse_file_info *fi,
			 const struct fop_backing *bk)
{
	struct hotfs_fh *fh;
	bool ok;
	int pt = 0;

	if (fs->o->revalidate != HOTFS_REVAL_SECONDS ||
	    fop_writes(fi->flags) || (fi->flags & O_TRUNC))
		return false;
	pthread_mutex_lock(&in->m);
	ok = fop_stamp_trusted_locked(fs, in) && !atomic_load(&in->retired);
	if (ok) {
		/* its copy where it can; an inode with passthrough opens
		 * takes no other kind (the source's path decides then) */
		pt = pt_open_locked(fs, in, fi, bk);
		ok = pt == 1 || (pt == 0 && !in->op.pt);
		if (pt == 0 && ok)
			in->op.n++;
	}
	pthread_mutex_unlock(&in->m);
	if (!ok)
		return false;
	/* only now: most opens past the window are not trusted */
	fh = fh_new(-1);
	if (!fh) {
		pthread_mutex_lock(&in->m);
		in->op.n--;
		if (pt == 1)
			in->op.pt--;	/* its backing id stays */
		pthread_mutex_unlock(&in->m);
		return false;
	}
	fh->lazy = true;
	fh->lazy_flags = fop_backing_flags(fi->flags);
	fh->pt = pt == 1;
	fi->fh = (uintptr_t)fh;
	/* the kernel's rule: no keep_cache with a backing file */
	fi->keep_cache = pt != 1;
	fi->noflush = 1;
	if (pt == 1)
		atomic_fetch_add_explicit(&fs->n_pt_open, 1,
					  memory_order_relaxed);
	return true;
}

/* Open the source file of in for a handle (O_TRUNC: a write through
 * the mount, in its change bracket); the fd or -errno. */
static int open_source(struct hotfs *fs, struct hotfs_inode *in,
		       int flags)
{
	struct hotfs_cache *c = fs_cache(fs);
	bool trunc = flags & O_TRUNC;
	struct fop_change ch;
	int fd;

	if (trunc) {
		fop_begin(&ch, fs);
		/* writeback: the log cut before the source */
		fd = fop_wb_hook(&ch, in, FOP_WB_TRUNCATE, 0);
		if (fd < 0)
			goto out;
	}
	fd = ino_fd(fs->it, in);
	if (fd < 0)
		goto out;
	if (trunc)
		fop_data_begin(&ch, in, c, 0, 0);
	fd = reopen_fd(fs->proc_self_fd, fd, fop_backing_flags(flags));
	if (trunc)
		fop_data_end(&ch, c, 0, 0, NULL, false);
	ino_fd_put(in);
out:
	if (trunc)
		fop_end(&ch);
	return fd;
}

int fop_open(struct hotfs *fs, struct hotfs_inode *in,
	     struct fuse_file_info *fi, const struct fop_backing *bk)
{
	struct hotfs_fh *fh;
	int fd, r;

	/* another inode stands for the file now: the kernel is to find
	 * it (see "Passthrough opens") */
	if (atomic_load(&in->retired))
		return -ESTALE;
	if (open_trusted(fs, in, fi, bk))
		return 0;
	fd = open_source(fs, in, fi->flags);
	if (fd < 0)
		return fd;
	atomic_fetch_add_explicit(&fs->n_src_open, 1, memory_order_relaxed);
	fh = fh_new(fd);
	if (!fh) {
		close(fd);
		return -ENOMEM;
	}
	fh->append = (fi->flags & O_APPEND) != 0;
	fi->fh = (uintptr_t)fh;
	/* a read-only handle has no write error to report at close: no
	 * flush round trip (locks are the kernel's own) */
	if (!fop_writes(fi->flags))
		fi->noflush = 1;
	r = settle_open(fs, in, fd, fi, fh, bk);
	if (r < 0) {
		fi->fh = 0;
		fh_free(fh);
	}
	return r;
}

void fop_open_undone(struct hotfs_inode *in, struct hotfs_fh *fh,
		     int flags)
{
	pthread_mutex_lock(&in->m);
	in->op.n--;
	if (fop_writes(flags) && in->op.w)
		in->op.w--;
	if (fh && fh->pt && in->op.pt)
		in->op.pt--;	/* its backing id stays with the inode */
	pthread_mutex_unlock(&in->m);
	fh_free(fh);
}
