// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers for file data (see src/fuse/fuse_i.h): open, create, read,
 * write, flush, fsync, release, fallocate, copy_file_range and lseek.
 *
 * Each decodes the request, calls its fop_* (hotfs/fop.h: the file
 * operations, the write mode and the change bracket) and replies once.
 *
 *  - O_DIRECT is honoured by the kernel (it sends the I/O to us without
 *    caching).
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
#include "hotfs/ctl.h"
#include "hotfs/fop.h"
#include "hotfs/log.h"

/*
 * Files without open round trips (fs->no_open).  With revalidate=never
 * nothing is checked when a file is opened, so the daemon answers the
 * first open ENOSYS (FUSE_CAP_NO_OPEN_SUPPORT): the kernel then sends no
 * open and no release for the rest of the connection, and, answered
 * ENOSYS once, no flush.  Reading a small cached file costs a lookup and
 * a read instead of four round trips.  Requests then come with fh 0: each
 * opens the source for itself (src/fop/fop_data.c) and closes it after;
 * reads share the inode's handle for counting accesses, and O_TRUNC
 * comes as a setattr (atomic_o_trunc is off).  The control files keep
 * snapshots instead (src/fuse/ctl.c).  Handles opened before the first
 * ENOSYS (control files) are freed at exit.
 */

/*
 * Passthrough's backing files (hotfs/passthrough.h, "Passthrough opens"
 * in hotfs/fop.h), made and closed through the request's session.  A
 * backing file the kernel refuses turns passthrough off for the mount,
 * said once.
 */
#ifdef FUSE_CAP_PASSTHROUGH
static int backing_open(void *arg, int fd)
{
	fuse_req_t req = arg;
	struct hotfs *fs = hfs(req);
	int id = fuse_passthrough_open(req, fd);

	if (id <= 0) {
		int e = errno;

		if (atomic_exchange(&fs->passthrough, false)) {
			atomic_store(&fs->pt_why, "off: the kernel refused a "
				     "backing file (the log says why)");
			hotfs_log(LOG_WARNING, "passthrough: off: the kernel "
				  "refused a backing file: %s\n", strerror(e));
		}
		return 0;
	}
	return id;
}

static void backing_close(void *arg, int id)
{
	fuse_passthrough_close(arg, id);
}
#endif

void hotfs_open(fuse_req_t req, fuse_ino_t ino,
		struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
#ifdef FUSE_CAP_PASSTHROUGH
	struct fop_backing bk = { backing_open, backing_close, req };
	const struct fop_backing *bkp = &bk;
#else
	const struct fop_backing *bkp = NULL;
#endif
	struct hotfs_inode *in;
	int err;

	if (vd_is(ino)) {
		vd_open(req, ino, fi);
		return;
	}
	in = hino(req, ino);
	count(&fs->n_open);
	count_uring(req);
	/* see "Files without open round trips" */
	err = fs->no_open ? -ENOSYS : fop_open(fs, in, fi, bkp);
	if (err == 1) {
		/* attributes only (offset < 0): the size is seen at once */
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
		err = 0;
	}
	if (err)
		fuse_reply_err(req, -err);
	else if (fuse_reply_open(req, fi) == -ENOENT)
		fop_open_undone(in, hfh(fi), fi->flags);
}

void hotfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);	/* req is gone once replied to */
	struct hotfs_inode *in = NULL;
	struct fop_lookup lk;
	struct fop_caller who;
	struct new_entry n;
	int err;

	new_entry_lookup(&n, &lk, req, parent, name);
	err = vd_is(parent) ? -EACCES : mark_name(parent, name) ? -EPERM :
	      -EEXIST;
	if (vd_is(parent) || vd_is_name(hfs(req), parent, name) ||
	    mark_name(parent, name))
		goto out;
	caller_of(req, &who);
	err = fop_create(fs, &who, hino(req, parent), name, mode, fi, &lk,
			 &in);
	if (!err)
		dir_changed(req, parent);
out:
	if (err) {
		fuse_reply_err(req, -err);
	} else if (fuse_reply_create(req, &n.e, fi) == -ENOENT) {
		/* interrupted: the kernel took neither the handle nor the
		 * lookup count */
		fop_open_undone(in, hfh(fi), fi->flags);
		forget_one(fs, n.e.ino, 1);
	}
}

void hotfs_release(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	int id;

	if (vd_is(ino)) {	/* ctl.c replies for the control files */
		vd_release(req, ino, fi);
		return;
	}
	id = fop_release(hfs(req), hino(req, ino), fi->fh ? hfh(fi) : NULL,
			 fi->flags);
#ifdef FUSE_CAP_PASSTHROUGH
	if (id > 0)
		fuse_passthrough_close(req, id);
#else
	(void)id;
#endif
	fuse_reply_err(req, 0);
}

void hotfs_flush(fuse_req_t req, fuse_ino_t ino,
		 struct fuse_file_info *fi)
{
	int err = -ENOSYS;	/* no open: no flush round trips either */

	if (fi->fh)
		err = vd_is(ino) ? 0 : fop_flush(hfs(req), hfh(fi));
	fuse_reply_err(req, -err);
}

/* The request's handle (NULL: none, no open). */
static struct hotfs_fh *req_fh(struct fuse_file_info *fi)
{
	return fi && fi->fh ? hfh(fi) : NULL;
}

void hotfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	int err = 0;

	if (!vd_is(ino))
		err = fop_sync(hfs(req), hino(req, ino), req_fh(fi),
			       datasync != 0);
	fuse_reply_err(req, -err);
}

void hotfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in;
	struct fop_rd rd;
	int r;

	if (vd_is(ino)) {	/* ctl.c replies for the control files */
		vd_read(req, ino, size, off, fi);
		return;
	}
	in = hino(req, ino);
	count_uring(req);
	r = fop_read(fs, in, req_fh(fi), fi->flags, size, off, &rd);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_iov(req, rd.rep.iov, rd.rep.n);
	/* (req is gone with the reply) */
	fop_read_done(fs, in, &rd);
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

void hotfs_write_buf(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_bufvec *in_buf, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;

	if (vd_is(ino)) {
		write_virtual(req, ino, in_buf, off, fi);
		return;
	}
	n = fop_write(hfs(req), hino(req, ino), req_fh(fi), fi->flags, in_buf,
		      off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

void hotfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
		     off_t off, off_t len, struct fuse_file_info *fi)
{
	int err = -EPERM;

	if (!vd_is(ino))
		err = fop_fallocate(hfs(req), hino(req, ino), req_fh(fi), mode,
				    off, len);
	fuse_reply_err(req, -err);
}

void hotfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
			   off_t off_in, struct fuse_file_info *fi_in,
			   fuse_ino_t ino_out, off_t off_out,
			   struct fuse_file_info *fi_out, size_t len,
			   int flags)
{
	ssize_t n = -EXDEV;

	if (!vd_is(ino_in) && !vd_is(ino_out))
		n = fop_copy_range(hfs(req), hino(req, ino_in), req_fh(fi_in),
				   off_in, hino(req, ino_out), req_fh(fi_out),
				   fi_out->flags, off_out, len, flags);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

void hotfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi)
{
	off_t r = -EINVAL;

	if (!vd_is(ino))
		r = fop_lseek(hfs(req), hino(req, ino), req_fh(fi), off,
			      whence);
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_lseek(req, r);
}
