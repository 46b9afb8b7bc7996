// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers for file data (see src/fuse_i.h): open, create, read,
 * write, flush, fsync, release, fallocate, copy_file_range and lseek.
 *
 *  - O_DIRECT is honoured by the kernel (it sends the I/O to us without
 *    caching); the daemon's own fd on the source is opened without it, so
 *    unaligned request buffers are fine.
 *  - flock() and POSIX locks are kept by the kernel for the mount: they
 *    are coherent between processes using the mount, not with processes
 *    that use the source directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fuse_i.h"
#include "hotfs/cache_write.h"
#include "hotfs/clock.h"
#include "hotfs/ctl.h"
#include "hotfs/fileio.h"
#include "hotfs/meta_fs.h"
#include "hotfs/readpath.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/watch.h"
#include "hotfs/wb.h"

/*
 * Files without open round trips (fs->no_open).  With revalidate=never
 * nothing is checked when a file is opened, so the daemon answers the
 * first open ENOSYS (FUSE_CAP_NO_OPEN_SUPPORT): the kernel then sends no
 * open and no release for the rest of the connection, and, answered
 * ENOSYS once, no flush.  Reading a small cached file costs a lookup and
 * a read instead of four round trips.  Requests then come with fh 0: each
 * opens the source for itself (src_fd, from the inode's O_PATH fd: no
 * path walk, no disk read) and closes it after (src_done, which reports
 * a failed close as NFS would at close(2)); reads share the inode's
 * handle for counting accesses (cache.h, NOFH_WINDOW_NS), and O_TRUNC
 * comes as a setattr (atomic_o_trunc is off).  The control files keep
 * snapshots instead (src/ctl.c).  Handles opened before the first
 * ENOSYS (control files) are freed at exit.
 */
static int src_fd(struct hotfs *fs, struct hotfs_inode *in,
		  struct fuse_file_info *fi, int flags, bool *tmp)
{
	int fd;

	*tmp = !(fi && fi->fh);
	if (!*tmp)
		return fh_src(fs, in, fi);
	fd = ino_fd(fs->it, in);
	if (fd < 0)
		return fd;
	fd = reopen_fd(fs->proc_self_fd, fd, flags);
	ino_fd_put(in);
	return fd;
}

/* Close what src_fd opened; -errno of a failed close, else 0. */
static int src_done(int fd, bool tmp)
{
	return tmp && fd >= 0 && close(fd) == -1 && errno != EINTR ?
	       -errno : 0;
}

/* The flags a handle-less write's own fd needs. */
static int write_flags(const struct fuse_file_info *fi)
{
	return O_WRONLY | (fi->flags & (O_APPEND | O_SYNC | O_DSYNC));
}

/* Flags for our own fd on the source: the kernel has handled these. */
int backing_flags(int flags)
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
	enum stamp_verdict v = STAMP_NEW;	/* unknown: drop them */
	struct stat st;
	bool pending;

	pthread_mutex_lock(&in->m);
	/* under m: a write of the mount's own that ends meanwhile has
	 * recorded its stamp (hotfs/stamp.h); from the server on a
	 * remote source (close-to-open: another client's close is seen) */
	if (srcprobe_stat_sync(fd, &st) == 0) {
		v = stamp_check_locked(in, &st);
		in->stamp_checked_ns = clock_mono_ns();
	}
	/* a getattr or the source watch saw the change first and its
	 * invalidation is on its way: this open must not keep what it
	 * will drop, nor return before the kernel's copy is gone */
	pending = stamp_inval_pending(in);
	if (pending)
		stamp_wait_inval_locked(in);
	fi->keep_cache = never || (v == STAMP_SAME && !pending &&
				   in->stamp_settled);
	/* the same stamp, recorded within its clock tick: the kernel's
	 * pages may hold a version written earlier in that tick; dropped
	 * now, the ones read from here on are of the version the stamp
	 * names once the tick is over */
	if (!fi->keep_cache && v == STAMP_SAME && in->stamp_valid)
		in->stamp_settled = !srcprobe_racy_now(in->stamp_mtime_ns,
						       in->stamp_ctime_ns);
	in->nopen++;
	pthread_mutex_unlock(&in->m);
	return (v == STAMP_CHANGED || pending) && !never;
}

/* revalidate=N: is in's stamp, as its last check took it from the
 * source, still trusted (unchanged by the mount since, settled)?  Under
 * in->m. */
static bool stamp_trusted_locked(struct hotfs *fs, struct hotfs_inode *in)
{
	int64_t limit = (int64_t)(fs->o->revalidate_secs * 1e9);

	return fs->o->revalidate == HOTFS_REVAL_SECONDS &&
	       in->stamp_valid && in->stamp_settled && in->stamp_checked_ns &&
	       clock_mono_ns() - in->stamp_checked_ns < limit &&
	       !in->chg_inflight && !in->wr_inflight &&
	       !stamp_inval_pending(in);
}

/*
 * revalidate=N: a read-only open of a file whose stamp an open took from
 * the source less than N seconds ago, unchanged since by the mount and
 * settled (hotfs/srcprobe.h), is answered without the source: the
 * kernel keeps its pages, and the handle opens the source file only if
 * a request needs it (fh_src).  A fully cached file read from the
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
	ok = stamp_trusted_locked(fs, in);
	if (ok)
		in->nopen++;
	pthread_mutex_unlock(&in->m);
	if (!ok)
		return false;
	/* only now: most opens past the window are not trusted */
	fh = fh_new(-1);
	if (!fh) {
		pthread_mutex_lock(&in->m);
		in->nopen--;
		pthread_mutex_unlock(&in->m);
		return false;
	}
	fh->lazy = true;
	fh->lazy_flags = backing_flags(fi->flags);
	fi->fh = (uintptr_t)fh;
	fi->keep_cache = 1;
	fi->noflush = 1;
	return true;
}

/* Open the source file of in for a handle (O_TRUNC: a write through
 * the mount); the fd or -errno. */
static int open_source(struct hotfs *fs, struct hotfs_inode *in,
		       int flags)
{
	struct hotfs_cache *c = fs_cache(fs);
	struct cache_wr w;
	int fd;

	/* writeback: the log cut before the source */
	if ((flags & O_TRUNC) && wb_on(fs, in)) {
		fd = wb_truncate(fs, in, 0);
		if (fd < 0)
			return fd;
	}
	fd = ino_fd(fs->it, in);
	if (fd < 0)
		return fd;
	if (flags & O_TRUNC)
		cache_write_begin(c, fs->it, in, &w, 0, 0);
	fd = reopen_fd(fs->proc_self_fd, fd, backing_flags(flags));
	if (flags & O_TRUNC)
		cache_write_end(c, in, &w, 0, 0, NULL);
	ino_fd_put(in);
	return fd;
}

/* The open was interrupted: the kernel will not release the handle. */
static void open_undone(struct hotfs_inode *in, struct hotfs_fh *fh)
{
	pthread_mutex_lock(&in->m);
	in->nopen--;
	pthread_mutex_unlock(&in->m);
	fh_free(fh);
}

void hotfs_open(fuse_req_t req, fuse_ino_t ino,
		struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in = hino(req, ino);
	struct hotfs_fh *fh;
	int fd, err;

	if (vd_is(ino)) {
		vd_open(req, ino, fi);
		return;
	}
	count(&fs->n_open);
	err = -ENOSYS;		/* see "Files without open round trips" */
	if (fs->no_open)
		goto out_err;
	if (open_trusted(fs, in, fi)) {
		if (fuse_reply_open(req, fi) == -ENOENT)
			open_undone(in, hfh(fi));
		return;
	}
	fd = open_source(fs, in, fi->flags);
	err = fd;
	if (fd < 0)
		goto out_err;
	count(&fs->n_src_open);
	err = -ENOMEM;
	fh = fh_new(fd);
	if (!fh) {
		close(fd);
		goto out_err;
	}
	fh->append = (fi->flags & O_APPEND) != 0;
	fi->fh = (uintptr_t)fh;
	/* a read-only handle has no write error to report at close: no
	 * flush round trip (locks are the kernel's own, see above) */
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
	if (set_keep_cache(in, fd, fi, fs->o->revalidate == HOTFS_REVAL_NEVER))
		/* attributes only (offset < 0): the size is seen at once */
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	if (fuse_reply_open(req, fi) == -ENOENT)
		open_undone(in, fh);
	return;
out_err:
	fuse_reply_err(req, -err);
}

/* Create (or open, without O_EXCL) name in parent as the caller; the fd
 * or -errno. */
static int create_at(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, int flags)
{
	struct watch_own own = { 0 };
	struct cred c;
	int fd, pfd;

	struct hotfs *fs = hfs(req);
	bool wb_trunc;
	struct stat st;

	pfd = ifd(req, parent);
	if (pfd < 0)
		return pfd;
	meta_fs_change(fs, hino(req, parent), NULL);
	/* writeback: an existing file's dirty data is cut in the log before
	 * the source is (opened without O_TRUNC, then cut) */
	wb_trunc = fs->wb && (flags & O_TRUNC) &&
		   (flags & O_ACCMODE) != O_RDONLY;
	if (wb_trunc)
		flags &= ~O_TRUNC;
	/* O_RDONLY|O_TRUNC cuts too, but leaves no descriptor to cut by:
	 * the file the name holds now, cut in the log first */
	else if (fs->wb && (flags & O_TRUNC) &&
		 fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		int r = wb_trunc_st(fs, &st);

		if (r < 0) {
			iput(req, parent);
			return r;
		}
	}
	as_caller(req, &c);
	caller_umask(req);
	/* (a file already there raises no event: hotfs/watch.h) */
	watch_own_add(fs->watch, &own, hino(req, parent), name, IN_CREATE);
	fd = openat(pfd, name, backing_flags(flags) | O_CREAT, mode);
	if (fd == -1)
		fd = -errno;
	watch_own_end(fs->watch, &own, fd >= 0);
	daemon_umask(req);
	as_daemon(&c);
	iput(req, parent);
	if (fd >= 0 && wb_trunc && fstat(fd, &st) == 0 && st.st_size >= 0) {
		int r = wb_trunc_fd(fs, fd, &st);

		if (r < 0) {
			close(fd);
			fd = r;
		}
	}
	return fd;
}

void hotfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct hotfs_inode *in;
	struct hotfs_fh *fh = NULL;
	int fd, err;

	err = vd_is(parent) ? -EACCES : mark_name(parent, name) ? -EPERM :
	      -EEXIST;
	if (vd_is(parent) || vd_is_name(hfs(req), parent, name) ||
	    mark_name(parent, name))
		goto out_err;
	fd = create_at(req, parent, name, mode, fi->flags);
	err = fd;
	if (fd < 0)
		goto out_err;
	err = do_lookup(req, parent, name, &e);
	/* without open the kernel sends no release: no handle to leak */
	if (!err && !hfs(req)->no_open) {
		fh = fh_new(fd);
		if (!fh) {	/* the lookup's count: no reply takes it */
			forget_one(req, e.ino, 1);
			err = -ENOMEM;
		}
	}
	if (!fh)
		close(fd);
	if (err)
		goto out_err;
	in = hino(req, e.ino);
	if (fh)
		fh->append = (fi->flags & O_APPEND) != 0;
	else
		fi->noflush = 1;
	if (fi->flags & O_TRUNC) {
		/* an existing file opened with O_CREAT|O_TRUNC */
		struct cache_wr w;

		/* no old stamp: drop them all */
		cache_write_begin(NULL, hfs(req)->it, in, &w, 0, 0);
		w.have_old = false;
		cache_write_end(fs_cache(hfs(req)), in, &w, 0, 0, NULL);
	}
	fi->fh = (uintptr_t)fh;
	pthread_mutex_lock(&in->m);
	in->nopen++;
	pthread_mutex_unlock(&in->m);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		/* interrupted: the kernel took neither the handle nor the
		 * lookup count */
		open_undone(in, fh);
		forget_one(req, e.ino, 1);
	}
	return;
out_err:
	fuse_reply_err(req, -err);
}

void hotfs_release(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	struct hotfs_inode *in = hino(req, ino);

	if (vd_is(ino)) {
		vd_release(req, ino, fi);
		return;
	}
	if (fi->fh) {		/* none: made by create without open */
		pthread_mutex_lock(&in->m);
		if (in->nopen)
			in->nopen--;
		pthread_mutex_unlock(&in->m);
		fh_release(fs_cache(hfs(req)), in, hfh(fi));
		fh_free(hfh(fi));
	}
	fuse_reply_err(req, 0);
}

void hotfs_flush(fuse_req_t req, fuse_ino_t ino,
		 struct fuse_file_info *fi)
{
	int err = 0;

	if (!fi->fh)		/* no open: no flush round trips either */
		err = -ENOSYS;
	/* a lazy handle never opened: nothing written, nothing to report */
	else if (!vd_is(ino) && fhfd(fi) >= 0 && close(dup(fhfd(fi))) == -1)
		/* like close(2) on the source: NFS reports write errors
		 * here */
		err = -errno;
	fuse_reply_err(req, -err);
}

void hotfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	bool tmp;
	int fd, err = 0;

	if (vd_is(ino))
		goto out;
	/* writeback: the log durable (group commit); the source's data is
	 * the flusher's, its size changes need fsync */
	if (wb_on(hfs(req), hino(req, ino))) {
		err = wb_sync(hfs(req), hino(req, ino));
		if (err || (datasync && !wb_failed(hfs(req))))
			goto out;
	}
	fd = src_fd(hfs(req), hino(req, ino), fi, O_RDONLY, &tmp);
	err = fd;
	if (fd < 0)
		goto out;
	err = (datasync ? fdatasync(fd) : fsync(fd)) == -1 ? -errno : 0;
	src_done(fd, tmp);
out:
	fuse_reply_err(req, -err);
}

/* The inode's shared handle, for reads without open (NULL: none). */
static struct hotfs_fh *shared_fh(struct hotfs_inode *in)
{
	struct hotfs_fh *fh;

	pthread_mutex_lock(&in->m);
	if (!in->nofh)
		in->nofh = fh_new_shared();
	fh = in->nofh;
	pthread_mutex_unlock(&in->m);
	return fh;
}

/*
 * A read through a handle open_trusted answered, whose source file is not
 * open yet: from the store alone, under the stamp the file's last check
 * took, while that is still trusted (cache_read_stored).  So a fully
 * cached file read after the kernel dropped its pages costs the source
 * nothing either.  True if *rep is the answer.
 */
static bool read_stored(struct hotfs *fs, struct hotfs_inode *in,
			struct hotfs_fh *fh, size_t size, off_t off,
			struct rp_reply *rep)
{
	struct hotfs_cache *c = fs_cache(fs);
	struct stat st = { 0 };
	bool ok;

	if (!c || !fh->lazy || atomic_load(&fh->fd) >= 0 ||
	    (fs->wb && wb_on(fs, in)))
		return false;
	pthread_mutex_lock(&in->m);
	ok = stamp_trusted_locked(fs, in);
	st.st_ino = in->ino;
	st.st_size = in->stamp_size;
	st.st_mtim.tv_sec = in->stamp_mtime_ns / 1000000000;
	st.st_mtim.tv_nsec = in->stamp_mtime_ns % 1000000000;
	st.st_ctim.tv_sec = in->stamp_ctime_ns / 1000000000;
	st.st_ctim.tv_nsec = in->stamp_ctime_ns % 1000000000;
	pthread_mutex_unlock(&in->m);
	return ok && cache_read_stored(c, in, fh, &st, size, off, rep) == 0;
}

void hotfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_cache *c = fs_cache(fs);
	struct hotfs_inode *in;
	struct hotfs_fh *fh;
	struct rp_reply rep;
	bool tmp = false;
	int fd, r;

	if (vd_is(ino)) {
		vd_read(req, ino, size, off, fi);
		return;
	}
	in = hino(req, ino);
	if (fi->fh) {
		fh = hfh(fi);
		if (read_stored(fs, in, fh, size, off, &rep)) {
			fuse_reply_iov(req, rep.iov, rep.n);
			rp_done(&rep);
			return;
		}
		fd = fh_src(fs, in, fi);
		if (fd < 0) {
			fuse_reply_err(req, -fd);
			return;
		}
	} else {
		/* no open: this read's own fd (the reader's O_NOATIME too),
		 * the inode's shared handle */
		fd = src_fd(fs, in, fi, O_RDONLY | (fi->flags & O_NOATIME),
			    &tmp);
		if (fd < 0) {
			fuse_reply_err(req, -fd);
			return;
		}
		fh = c ? shared_fh(in) : NULL;
		/* the reply may be the kernel's last use of the inode: hold
		 * it until the handle has given up what it assembled (a
		 * partial extent: promoted from the source if it is hot) */
		if (fh)
			ino_hold(fs->it, in);
	}
	for (;;) {
		uint64_t gen = wb_read_gen(fs, in);

		if (c && fh)
			r = cache_read(c, in, fh, fd, size, off, &rep);
		else
			r = rp_read_source(fd, size, off, &rep);
		/* writeback: the dirty bytes over the file's own; again if a
		 * flush ended under the read */
		if (r < 0 || !fs->wb || !wb_on(fs, in))
			break;
		r = wb_read_fix(fs, in, fd, size, off, &rep, gen);
		if (r != 1)
			break;
		rp_done(&rep);
	}
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_iov(req, rep.iov, rep.n);
	rp_done(&rep);
	if (!fi->fh) {
		if (fh) {
			fh_release(c, in, fh);
			ino_unhold(fs->it, in);
		}
		src_done(fd, tmp);
	}
}

static void write_virtual(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_bufvec *in_buf, off_t off,
			  struct fuse_file_info *fi)
{
	size_t len = fuse_buf_size(in_buf);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(len);
	char *b = malloc(len + 1);
	ssize_t n = -ENOMEM;

	if (b) {
		mem.buf[0].mem = b;
		n = fuse_buf_copy(&mem, in_buf, 0);
	}
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		vd_write(req, ino, b, (size_t)n, off, fi);
	free(b);
}

/* writeback: in_buf at off into the log (hotfs/wb.h); the bytes written
 * or -errno.  The kernel's offset is where the bytes go, O_APPEND's too
 * (its size of the file includes the dirty end). */
static ssize_t write_back(struct hotfs *fs, struct hotfs_inode *in,
			  struct fuse_bufvec *in_buf, off_t off,
			  const struct fuse_file_info *fi)
{
	size_t len = fuse_buf_size(in_buf);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(len);
	const void *data;
	char *b = NULL;
	ssize_t n;

	if (in_buf->count == 1 && !(in_buf->buf[0].flags & FUSE_BUF_IS_FD)) {
		data = (const char *)in_buf->buf[0].mem + in_buf->off;
	} else {
		b = malloc(len ? len : 1);
		if (!b)
			return -ENOMEM;
		mem.buf[0].mem = b;
		n = fuse_buf_copy(&mem, in_buf, 0);
		if (n < 0) {
			free(b);
			return n;
		}
		len = (size_t)n;
		data = b;
	}
	n = len ? wb_write(fs, in, data, len, off,
			   (fi->flags & (O_SYNC | O_DSYNC)) != 0) : 0;
	free(b);
	return n;
}

/* Write in_buf at off into the source fd; the bytes written or -errno. */
static ssize_t write_source(struct hotfs *fs, struct hotfs_inode *in, int fd,
			    bool append, struct fuse_bufvec *in_buf, off_t off)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in_buf));
	struct hotfs_cache *c = fs_cache(fs);
	const void *data = NULL;
	struct cache_wr w;
	ssize_t n;

	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	/* the written bytes, for writethrough, when they are in memory */
	if (in_buf->count == 1 && !(in_buf->buf[0].flags & FUSE_BUF_IS_FD))
		data = (const char *)in_buf->buf[0].mem + in_buf->off;
	cache_write_begin(c, fs->it, in, &w,
			  append ? 0 : (uint64_t)off,
			  append ? CACHE_WR_TO_END : fuse_buf_size(in_buf));
	n = fuse_buf_copy(&out, in_buf, 0);
	/* O_APPEND: the kernel's offset may not be where it landed */
	if (append && n > 0)
		cache_write_end(c, in, &w, 0, CACHE_WR_TO_END, NULL);
	else
		cache_write_end(c, in, &w, (uint64_t)off,
				n > 0 ? (uint64_t)n : fuse_buf_size(in_buf),
				n > 0 ? data : NULL);
	return n;
}

void hotfs_write_buf(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_bufvec *in_buf, off_t off,
		     struct fuse_file_info *fi)
{
	struct hotfs_inode *in = hino(req, ino);
	struct hotfs *fs = hfs(req);
	bool tmp, append;
	ssize_t n;
	int fd, r;

	if (vd_is(ino)) {
		write_virtual(req, ino, in_buf, off, fi);
		return;
	}
	if (wb_on(fs, in)) {
		n = write_back(fs, in, in_buf, off, fi);
		/* -EXDEV: the log failed, the file's dirty data is on the
		 * source: this write goes there too */
		if (n != -EXDEV)
			goto out;
	}
	fd = src_fd(fs, in, fi, write_flags(fi), &tmp);
	n = fd;
	if (fd >= 0) {
		append = tmp ? (fi->flags & O_APPEND) != 0 : hfh(fi)->append;
		n = write_source(fs, in, fd, append, in_buf, off);
		/* a write's own fd: its close reports what flush would
		 * have */
		r = src_done(fd, tmp);
		if (n >= 0 && r < 0)
			n = r;
	}
out:
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

void hotfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
		     off_t off, off_t len, struct fuse_file_info *fi)
{
	struct hotfs_inode *in = hino(req, ino);
	struct hotfs_cache *hc;
	struct cache_wr w;
	uint64_t wlen;
	bool tmp;
	int fd, c, err = -EPERM;

	if (vd_is(ino))
		goto out;
	/* collapse and insert move everything after off */
	wlen = mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) ?
	       CACHE_WR_TO_END : (uint64_t)len;
	/* writeback: what changes bytes on the source goes after the
	 * file's dirty data (flushed and sealed) */
	if (wb_on(hfs(req), in) && (mode & ~FALLOC_FL_KEEP_SIZE)) {
		err = wb_flush_inode(hfs(req), in);
		if (err)
			goto out;
	}
	fd = src_fd(hfs(req), in, fi, O_WRONLY, &tmp);
	err = fd;
	if (fd < 0)
		goto out;
	hc = fs_cache(hfs(req));
	cache_write_begin(hc, hfs(req)->it, in, &w, (uint64_t)off, wlen);
	err = fallocate(fd, mode, off, len) == -1 ? -errno : 0;
	cache_write_end(hc, in, &w, (uint64_t)off, wlen, NULL);
	c = src_done(fd, tmp);
	if (!err)
		err = c;
out:
	fuse_reply_err(req, -err);
}

/* copy_file_range between the source files fd_in and fd_out (of out);
 * the bytes copied or -errno. */
static ssize_t copy_source(struct hotfs *fs, struct hotfs_inode *out,
			   int fd_in, off_t off_in, int fd_out, off_t off_out,
			   size_t len, int flags)
{
	struct hotfs_cache *hc = fs_cache(fs);
	uint64_t at = (uint64_t)off_out;
	struct cache_wr w;
	ssize_t n;

	cache_write_begin(hc, fs->it, out, &w, at, len);
	n = copy_file_range(fd_in, &off_in, fd_out, &off_out, len,
			    (unsigned)flags);
	if (n == -1)
		n = -errno;
	cache_write_end(hc, out, &w, at, len, NULL);
	return n;
}

void hotfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
			   off_t off_in, struct fuse_file_info *fi_in,
			   fuse_ino_t ino_out, off_t off_out,
			   struct fuse_file_info *fi_out, size_t len,
			   int flags)
{
	struct hotfs_inode *out = hino(req, ino_out);
	bool tmp_in, tmp_out;
	int fd_in, fd_out, c;
	ssize_t n = -EXDEV;

	if (vd_is(ino_in) || vd_is(ino_out))
		goto out;
	/* writeback: the kernel copies through read and write instead */
	n = -ENOSYS;
	if (hfs(req)->wb)
		goto out;
	fd_in = src_fd(hfs(req), hino(req, ino_in), fi_in, O_RDONLY, &tmp_in);
	n = fd_in;
	if (fd_in < 0)
		goto out;
	fd_out = src_fd(hfs(req), out, fi_out, write_flags(fi_out), &tmp_out);
	n = fd_out;
	if (fd_out >= 0) {
		n = copy_source(hfs(req), out, fd_in, off_in, fd_out, off_out,
				len, flags);
		c = src_done(fd_out, tmp_out);
		if (n >= 0 && c < 0)
			n = c;
	}
	src_done(fd_in, tmp_in);
out:
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

void hotfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi)
{
	off_t r = -EINVAL;
	bool tmp;
	int fd;

	if (vd_is(ino))
		goto out;
	/* writeback: the source knows no dirty data; the kernel then takes
	 * the whole file for data */
	r = -ENOSYS;
	if (hfs(req)->wb)
		goto out;
	fd = src_fd(hfs(req), hino(req, ino), fi, O_RDONLY, &tmp);
	r = fd;
	if (fd < 0)
		goto out;
	r = lseek(fd, off, whence);
	if (r == -1)
		r = -errno;
	src_done(fd, tmp);
out:
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_lseek(req, r);
}
