// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The operations on a file's data (hotfs/fop.h): read, write, truncate,
 * fallocate, copy_file_range, fsync and lseek, in the file's write mode
 * (fop_writeback), each change in the change bracket (src/fop/fop.c).
 *
 *  - The daemon's own fd on the source is opened without O_DIRECT, so
 *    unaligned request buffers are fine.
 *  - Requests without a handle (no open: src/fuse/fuse_file.c, "Files without
 *    open round trips") open the source for themselves (src_fd, from the
 *    inode's O_PATH fd: no path walk) and close it after (src_done, which
 *    reports a failed close as NFS would at close(2)); their reads share
 *    the inode's handle for counting accesses (cache.h, NOFH_WINDOW_NS).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/fileio.h"
#include "hotfs/fop.h"
#include "hotfs/stamp.h"
#include "hotfs/wb.h"

/* The source file of handle fh (opened now if lazy), or without one a
 * descriptor of its own (*tmp): the fd or -errno. */
static int src_fd(struct hotfs *fs, struct hotfs_inode *in,
		  struct hotfs_fh *fh, int flags, bool *tmp)
{
	bool opened = false;
	int fd;

	*tmp = !fh;
	if (fh) {
		fd = fh_source(fh, fs->it, in, fs->proc_self_fd, &opened);
		if (opened)
			atomic_fetch_add_explicit(&fs->n_src_open, 1,
						  memory_order_relaxed);
		return fd;
	}
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
static int write_flags(int flags)
{
	return O_WRONLY | (flags & (O_APPEND | O_SYNC | O_DSYNC));
}

/* The inode's shared handle, for reads without open (NULL: none). */
static struct hotfs_fh *shared_fh(struct hotfs_inode *in)
{
	struct hotfs_fh *fh;

	pthread_mutex_lock(&in->m);
	if (!in->op.nofh)
		in->op.nofh = fh_new_shared();
	fh = in->op.nofh;
	pthread_mutex_unlock(&in->m);
	return fh;
}

/*
 * A read through a handle fop_open_trusted answered, whose source file is
 * not open yet: from the store alone, under the stamp the file's last
 * check took, while that is still trusted (cache_read_stored).  So a
 * fully cached file read after the kernel dropped its pages costs the
 * source nothing either.  True if *rep is the answer.
 */
static bool read_stored(struct hotfs *fs, struct hotfs_inode *in,
			struct hotfs_fh *fh, size_t size, off_t off,
			struct rp_reply *rep)
{
	struct hotfs_cache *c = fs_cache(fs);
	struct stat st = { 0 };
	bool ok;

	if (!c || !fh->lazy || atomic_load(&fh->fd) >= 0 ||
	    fop_writeback(fs, in))
		return false;
	pthread_mutex_lock(&in->m);
	ok = fop_stamp_trusted_locked(fs, in);
	stamp_stat_locked(in, &st);
	pthread_mutex_unlock(&in->m);
	return ok && cache_read_stored(c, in, fh, &st, size, off, rep) == 0;
}

/* The read itself from src (fh: the handle, the shared one, or NULL),
 * with writeback's dirty bytes over it. */
static int read_from(struct hotfs *fs, struct hotfs_inode *in,
		     struct hotfs_fh *fh, int src, size_t size, off_t off,
		     struct rp_reply *rep)
{
	struct hotfs_cache *c = fs_cache(fs);
	bool wb = fop_writeback(fs, in);
	int r;

	for (;;) {
		uint64_t gen = wb_read_gen(fs->wb, in);

		if (c && fh)
			r = cache_read(c, in, fh, src, size, off, rep);
		else
			r = rp_read_source(src, size, off, rep);
		/* writeback: the dirty bytes over the file's own; again if a
		 * flush ended under the read */
		if (r < 0 || !wb)
			return r;
		r = wb_read_fix(fs->wb, in, src, size, off, rep, gen);
		if (r != 1)
			return r;
		rp_done(rep);
	}
}

int fop_read(struct hotfs *fs, struct hotfs_inode *in, struct hotfs_fh *fh,
	     int flags, size_t size, off_t off, struct fop_rd *rd)
{
	struct hotfs_cache *c = fs_cache(fs);

	memset(rd, 0, sizeof(*rd));
	rd->fd = -1;
	if (fh) {
		if (read_stored(fs, in, fh, size, off, &rd->rep))
			return 0;
		rd->fd = src_fd(fs, in, fh, 0, &rd->tmp);
		if (rd->fd < 0)
			return rd->fd;
	} else {
		/* no open: this read's own fd (the reader's O_NOATIME too),
		 * the inode's shared handle */
		rd->fd = src_fd(fs, in, NULL, O_RDONLY | (flags & O_NOATIME),
				&rd->tmp);
		if (rd->fd < 0)
			return rd->fd;
		fh = rd->shared = c ? shared_fh(in) : NULL;
		/* the reply may be the kernel's last use of the inode: hold
		 * it until the handle has given up what it assembled (a
		 * partial extent: promoted from the source if it is hot) */
		if (fh)
			ino_hold(fs->it, in);
	}
	return read_from(fs, in, fh, rd->fd, size, off, &rd->rep);
}

void fop_read_done(struct hotfs *fs, struct hotfs_inode *in,
		   struct fop_rd *rd)
{
	rp_done(&rd->rep);
	if (rd->shared) {
		fh_release(fs_cache(fs), in, rd->shared);
		ino_unhold(fs->it, in);
	}
	if (rd->fd >= 0)
		src_done(rd->fd, rd->tmp);
}

/* writeback: buf at off into the log (hotfs/wb.h); the bytes written or
 * -errno.  The kernel's offset is where the bytes go, O_APPEND's too
 * (its size of the file includes the dirty end). */
static ssize_t write_back(struct hotfs *fs, struct hotfs_inode *in,
			  struct fuse_bufvec *buf, off_t off, int flags)
{
	size_t len = fuse_buf_size(buf);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(len);
	const void *data;
	char *b = NULL;
	ssize_t n;

	if (buf->count == 1 && !(buf->buf[0].flags & FUSE_BUF_IS_FD)) {
		data = (const char *)buf->buf[0].mem + buf->off;
	} else {
		b = malloc(len ? len : 1);
		if (!b)
			return -ENOMEM;
		mem.buf[0].mem = b;
		n = fuse_buf_copy(&mem, buf, 0);
		if (n < 0) {
			free(b);
			return n;
		}
		len = (size_t)n;
		data = b;
	}
	n = len ? wb_write(fs->wb, in, data, len, off,
			   (flags & (O_SYNC | O_DSYNC)) != 0) : 0;
	free(b);
	return n;
}

/* Write buf at off into the source fd, in the change bracket ch; the
 * bytes written or -errno. */
static ssize_t write_source(struct fop_change *ch, struct hotfs_inode *in,
			    int fd, bool append, struct fuse_bufvec *buf,
			    off_t off)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(buf));
	struct hotfs_cache *c = fs_cache(ch->fs);
	const void *data = NULL;
	ssize_t n;

	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	/* the written bytes, for writethrough, when they are in memory */
	if (buf->count == 1 && !(buf->buf[0].flags & FUSE_BUF_IS_FD))
		data = (const char *)buf->buf[0].mem + buf->off;
	fop_data_begin(ch, in, c, append ? 0 : (uint64_t)off,
		       append ? CACHE_WR_TO_END : fuse_buf_size(buf));
	n = fuse_buf_copy(&out, buf, 0);
	/* O_APPEND: the kernel's offset may not be where it landed */
	if (append && n > 0)
		fop_data_end(ch, c, 0, CACHE_WR_TO_END, NULL, false);
	else
		fop_data_end(ch, c, (uint64_t)off,
			     n > 0 ? (uint64_t)n : fuse_buf_size(buf),
			     n > 0 ? data : NULL, false);
	return n;
}

ssize_t fop_write(struct hotfs *fs, struct hotfs_inode *in,
		  struct hotfs_fh *fh, int flags, struct fuse_bufvec *buf,
		  off_t off)
{
	struct fop_change ch;
	bool tmp, append;
	ssize_t n = -EXDEV;
	int fd, r;

	fop_begin(&ch, fs);
	if (fop_writeback(fs, in))
		n = write_back(fs, in, buf, off, flags);
	/* -EXDEV: the log failed, the file's dirty data is on the source:
	 * this write goes there too */
	if (n == -EXDEV) {
		fd = src_fd(fs, in, fh, write_flags(flags), &tmp);
		n = fd;
		if (fd >= 0) {
			append = tmp ? (flags & O_APPEND) != 0 : fh->append;
			n = write_source(&ch, in, fd, append, buf, off);
			/* a write's own fd: its close reports what flush
			 * would have */
			r = src_done(fd, tmp);
			if (n >= 0 && r < 0)
				n = r;
		}
	}
	fop_end(&ch);
	return n;
}

int fop_truncate(struct fop_change *ch, struct hotfs_inode *in, int fd,
		 int hfd, off_t size)
{
	struct hotfs_cache *c = fs_cache(ch->fs);
	char path[64];
	int r;

	/* writeback: the log cut before the source */
	r = fop_wb_hook(ch, in, FOP_WB_TRUNCATE, (uint64_t)size);
	if (r < 0)
		return r;
	fop_data_begin(ch, in, c, 0, 0);
	if (hfd >= 0) {
		r = ftruncate(hfd, size);
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		r = truncate(path, size);
	}
	r = r == -1 ? -errno : 0;
	fop_data_end(ch, c, 0, 0, NULL, false);
	return r;
}

int fop_fallocate(struct hotfs *fs, struct hotfs_inode *in,
		  struct hotfs_fh *fh, int mode, off_t off, off_t len)
{
	struct hotfs_cache *hc = fs_cache(fs);
	struct fop_change ch;
	uint64_t wlen;
	bool tmp;
	int fd, c, err;

	fop_begin(&ch, fs);
	/* collapse and insert move everything after off */
	wlen = mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) ?
	       CACHE_WR_TO_END : (uint64_t)len;
	/* writeback: what changes bytes on the source goes after the
	 * file's dirty data (flushed and sealed) */
	if (mode & ~FALLOC_FL_KEEP_SIZE) {
		err = fop_wb_hook(&ch, in, FOP_WB_FLUSH, 0);
		if (err)
			goto out;
	}
	fd = src_fd(fs, in, fh, O_WRONLY, &tmp);
	err = fd;
	if (fd < 0)
		goto out;
	fop_data_begin(&ch, in, hc, (uint64_t)off, wlen);
	err = fallocate(fd, mode, off, len) == -1 ? -errno : 0;
	fop_data_end(&ch, hc, (uint64_t)off, wlen, NULL, false);
	c = src_done(fd, tmp);
	if (!err)
		err = c;
out:
	fop_end(&ch);
	return err;
}

ssize_t fop_copy_range(struct hotfs *fs, struct hotfs_inode *in,
		       struct hotfs_fh *fh_in, off_t off_in,
		       struct hotfs_inode *out, struct hotfs_fh *fh_out,
		       int flags_out, off_t off_out, size_t len, int flags)
{
	struct hotfs_cache *hc = fs_cache(fs);
	uint64_t at = (uint64_t)off_out;
	struct fop_change ch;
	bool tmp_in, tmp_out;
	int fd_in, fd_out, c;
	ssize_t n;

	fop_begin(&ch, fs);
	/* writeback: the kernel copies through read and write instead */
	n = -ENOSYS;
	if (fop_writeback(fs, NULL))
		goto out;
	fd_in = src_fd(fs, in, fh_in, O_RDONLY, &tmp_in);
	n = fd_in;
	if (fd_in < 0)
		goto out;
	fd_out = src_fd(fs, out, fh_out, write_flags(flags_out), &tmp_out);
	n = fd_out;
	if (fd_out >= 0) {
		fop_data_begin(&ch, out, hc, at, len);
		n = copy_file_range(fd_in, &off_in, fd_out, &off_out, len,
				    (unsigned)flags);
		if (n == -1)
			n = -errno;
		fop_data_end(&ch, hc, at, len, NULL, false);
		c = src_done(fd_out, tmp_out);
		if (n >= 0 && c < 0)
			n = c;
	}
	src_done(fd_in, tmp_in);
out:
	fop_end(&ch);
	return n;
}

int fop_sync(struct hotfs *fs, struct hotfs_inode *in, struct hotfs_fh *fh,
	     bool datasync)
{
	bool tmp;
	int fd, err;

	/* writeback: the log durable (group commit); the source's data is
	 * the flusher's, its size changes need fsync */
	if (fop_writeback(fs, in)) {
		err = wb_sync(fs->wb, in);
		if (err || (datasync && !wb_failed(fs->wb)))
			return err;
	}
	fd = src_fd(fs, in, fh, O_RDONLY, &tmp);
	if (fd < 0)
		return fd;
	err = (datasync ? fdatasync(fd) : fsync(fd)) == -1 ? -errno : 0;
	src_done(fd, tmp);
	return err;
}

off_t fop_lseek(struct hotfs *fs, struct hotfs_inode *in,
		struct hotfs_fh *fh, off_t off, int whence)
{
	off_t r;
	bool tmp;
	int fd;

	/* writeback: the source knows no dirty data; the kernel then takes
	 * the whole file for data */
	if (fop_writeback(fs, NULL))
		return -ENOSYS;
	fd = src_fd(fs, in, fh, O_RDONLY, &tmp);
	if (fd < 0)
		return fd;
	r = lseek(fd, off, whence);
	if (r == -1)
		r = -errno;
	src_done(fd, tmp);
	return r;
}
