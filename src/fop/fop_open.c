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
#include "hotfs/fileio.h"
#include "hotfs/fop.h"
#include "hotfs/stamp.h"
#include "hotfs/wb.h"

int fop_backing_flags(int flags)
{
	flags &= ~(O_NOFOLLOW | O_DIRECT);
	return flags | O_CLOEXEC;
}

/*
 * Keep the kernel's page cache if the file is as we last saw it.  Returns
 * true if it changed behind the mount since: close-to-open then wants the
 * kernel's cached attributes dropped too.
 */
static bool set_keep_cache(struct hotfs_inode *in, int fd,
			   struct fuse_file_info *fi, bool never)
{
	bool keep, changed;

	pthread_mutex_lock(&in->m);
	changed = stamp_open_locked(in, fd, never, &keep);
	fi->keep_cache = keep;
	in->op.n++;
	pthread_mutex_unlock(&in->m);
	return changed;
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
			 struct fuse_file_info *fi)
{
	struct hotfs_fh *fh;
	bool ok;

	if (fs->o->revalidate != HOTFS_REVAL_SECONDS ||
	    (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return false;
	pthread_mutex_lock(&in->m);
	ok = fop_stamp_trusted_locked(fs, in);
	if (ok)
		in->op.n++;
	pthread_mutex_unlock(&in->m);
	if (!ok)
		return false;
	/* only now: most opens past the window are not trusted */
	fh = fh_new(-1);
	if (!fh) {
		pthread_mutex_lock(&in->m);
		in->op.n--;
		pthread_mutex_unlock(&in->m);
		return false;
	}
	fh->lazy = true;
	fh->lazy_flags = fop_backing_flags(fi->flags);
	fi->fh = (uintptr_t)fh;
	fi->keep_cache = 1;
	fi->noflush = 1;
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
	     struct fuse_file_info *fi)
{
	struct hotfs_fh *fh;
	int fd;

	if (open_trusted(fs, in, fi))
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
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
	return set_keep_cache(in, fd, fi,
			      fs->o->revalidate == HOTFS_REVAL_NEVER) ? 1 : 0;
}

void fop_open_undone(struct hotfs_inode *in, struct hotfs_fh *fh)
{
	pthread_mutex_lock(&in->m);
	in->op.n--;
	pthread_mutex_unlock(&in->m);
	fh_free(fh);
}
