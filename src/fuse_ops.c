// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE low-level operations table and FUSE_INIT.  The handlers are
 * in src/fuse_*.c (src/fuse_i.h says which file holds what); each decodes
 * the request, calls the source through *at() syscalls on the inode's
 * O_PATH fd or the cache, and replies exactly once.
 *
 * Modelled on libfuse's example/passthrough_ll.c and passthrough_hp.cc.
 * Decisions a user may need to know (also in man/hotfs.8):
 *  - st_ino, nlink, sizes and times are the source's, unchanged.
 *  - When the daemon runs as root, operations that create objects run
 *    with the caller's credentials (hotfs/cred.h).
 */
#include <linux/fs.h>

#include "fuse_i.h"
#include "hotfs/bdi.h"
#include "hotfs/log.h"
#include "hotfs/namecache.h"



static void nofh_free(void *nofh)
{
	fh_free(nofh);
}

/* The kernel's read-ahead for the mount (hotfs/bdi.h), before the answer
 * to FUSE_INIT: a failure leaves the kernel's default, slower for large
 * files but correct. */
static void set_read_ahead(struct hotfs *fs)
{
	char why[300];

	if (!fs->mount_dev_known) {
		hotfs_log(LOG_NOTICE, "read_ahead: %s not found in "
			  "/proc/self/mountinfo; the kernel's default stays\n",
			  fs->o->mountpoint);
		return;
	}
	if (bdi_set_read_ahead("/sys", fs->mount_dev, fs->o->read_ahead, why,
			       sizeof(why)) < 0)
		hotfs_log(LOG_NOTICE, "read_ahead: %s; the kernel's default "
			  "stays\n", why);
}

static void hotfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct hotfs *fs = userdata;

	conn->max_write = 1024 * 1024;
	/* what the mount option said, as libfuse requires */
	conn->max_read = fs->o->max_read;
	/* the kernel keeps the smaller of this and the bdi's read-ahead
	 * when it gets this answer: both are set (hotfs/bdi.h) */
	conn->max_readahead = fs->o->read_ahead ? (unsigned)fs->o->read_ahead
						: 1024 * 1024;
	if (fs->o->read_ahead)
		set_read_ahead(fs);
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* files without open round trips where nothing is checked at open
	 * (see "Files without open round trips"); O_TRUNC then comes as a
	 * setattr, since no open would carry it */
	if (fs->o->revalidate == HOTFS_REVAL_NEVER &&
	    (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)) {
		fs->no_open = true;
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
		ino_set_nofh_free(fs->it, nofh_free);
	}
	/* the kernel would drop a file's cached pages at every new mtime it
	 * sees, its own writes' too, and so race them (hotfs/stamp.h): the
	 * daemon drops them itself when the file changed behind the mount
	 * (open, getattr, the source watch; the control files at getattr) */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	/* directories answered from listings, no opendir round trips,
	 * where nothing has to be checked at opendir: the tree changes
	 * only through hotfs, or the source watch reports every change
	 * (and the user did not set the timeouts, asking for checks) */
	if (fs->listings && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) &&
	    (fs->o->revalidate == HOTFS_REVAL_NEVER ||
	     (fs->watch && ino_root(fs->it)->wd > 0 &&
	      !fs->o->attr_timeout_str && !fs->o->entry_timeout_str)))
		fs->no_opendir = true;
	/* with default_permissions the kernel checks access: let it see
	 * the source's POSIX ACLs too (the source keeps modes and default
	 * ACLs in step itself when hotfs sets them) */
	if ((fs->o->default_permissions || fs->o->allow_other) &&
	    (conn->capable & FUSE_CAP_POSIX_ACL))
		conn->want |= FUSE_CAP_POSIX_ACL;
	/* the source applies the umask (or a default ACL) itself */
	if (conn->capable & FUSE_CAP_DONT_MASK) {
		conn->want |= FUSE_CAP_DONT_MASK;
		fs->dont_mask = true;
	}
	/* the kernel strips setuid/setgid on write and chown for us */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* no writeback cache: every write reaches the daemon before
	 * write(2) returns, and the source (or, with writemode=writeback,
	 * the writeback log: hotfs/wb.h) at once; a kill of the daemon
	 * loses no acknowledged write */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* locks stay in the kernel, coherent across users of the mount */
	conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
}

/*
 * Requests that may change a name or attributes on the source move the
 * daemon's name cache's change generation before they start and after
 * they end (hotfs/namecache.h): a lookup that overlapped one is not kept.
 * (Read-only handles have no flush, and their release changes nothing.)
 */
static void chg_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int valid, struct fuse_file_info *fi)
{
	nc_changed();
	hotfs_setattr(req, ino, attr, valid, fi);
	nc_changed();
}

static void chg_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev)
{
	nc_changed();
	hotfs_mknod(req, parent, name, mode, rdev);
	nc_changed();
}

static void chg_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode)
{
	nc_changed();
	hotfs_mkdir(req, parent, name, mode);
	nc_changed();
}

static void chg_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			const char *name)
{
	nc_changed();
	hotfs_symlink(req, link, parent, name);
	nc_changed();
}

static void chg_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		     const char *name)
{
	nc_changed();
	hotfs_link(req, ino, parent, name);
	nc_changed();
}

static void chg_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	nc_changed();
	hotfs_unlink(req, parent, name);
	nc_changed();
}

static void chg_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	nc_changed();
	hotfs_rmdir(req, parent, name);
	nc_changed();
}

static void chg_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname,
		       unsigned int flags)
{
	nc_changed();
	hotfs_rename(req, parent, name, newparent, newname, flags);
	nc_changed();
}

static void chg_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	bool trunc = fi->flags & O_TRUNC;

	if (trunc)
		nc_changed();
	hotfs_open(req, ino, fi);
	if (trunc)
		nc_changed();
}

static void chg_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	nc_changed();
	hotfs_create(req, parent, name, mode, fi);
	nc_changed();
}

static void chg_flush(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	bool src = !vd_is(ino);	/* the control files change nothing */

	if (src)
		nc_changed();
	hotfs_flush(req, ino, fi);
	if (src)
		nc_changed();
}

static void chg_release(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	bool wr = (fi->flags & O_ACCMODE) != O_RDONLY;

	if (wr)
		nc_changed();
	hotfs_release(req, ino, fi);
	if (wr)
		nc_changed();
}

static void chg_write_buf(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_bufvec *in_buf, off_t off,
			  struct fuse_file_info *fi)
{
	nc_changed();
	hotfs_write_buf(req, ino, in_buf, off, fi);
	nc_changed();
}

static void chg_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			  off_t off, off_t len, struct fuse_file_info *fi)
{
	nc_changed();
	hotfs_fallocate(req, ino, mode, off, len, fi);
	nc_changed();
}

static void chg_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
				off_t off_in, struct fuse_file_info *fi_in,
				fuse_ino_t ino_out, off_t off_out,
				struct fuse_file_info *fi_out, size_t len,
				int flags)
{
	nc_changed();
	hotfs_copy_file_range(req, ino_in, off_in, fi_in, ino_out, off_out,
			      fi_out, len, flags);
	nc_changed();
}

static void chg_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 const char *value, size_t size, int flags)
{
	nc_changed();
	hotfs_setxattr(req, ino, name, value, size, flags);
	nc_changed();
}

static void chg_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	nc_changed();
	hotfs_removexattr(req, ino, name);
	nc_changed();
}

static void chg_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		      void *arg, struct fuse_file_info *fi, unsigned flags,
		      const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	/* the setters of file attributes (a tty check, TCGETS, is every
	 * Python open's) */
	bool set = cmd == FS_IOC_SETFLAGS || cmd == FS_IOC_FSSETXATTR;

	if (set)
		nc_changed();
	hotfs_ioctl(req, ino, cmd, arg, fi, flags, in_buf, in_bufsz,
		    out_bufsz);
	if (set)
		nc_changed();
}

const struct fuse_lowlevel_ops hotfs_ll_ops = {
	.init = hotfs_init,
	.lookup = hotfs_lookup,
	.forget = hotfs_forget,
	.forget_multi = hotfs_forget_multi,
	.getattr = hotfs_getattr,
	.setattr = chg_setattr,
	.readlink = hotfs_readlink,
	.mknod = chg_mknod,
	.mkdir = chg_mkdir,
	.symlink = chg_symlink,
	.link = chg_link,
	.unlink = chg_unlink,
	.rmdir = chg_rmdir,
	.rename = chg_rename,
	.open = chg_open,
	.create = chg_create,
	.release = chg_release,
	.flush = chg_flush,
	.fsync = hotfs_fsync,
	.read = hotfs_read,
	.write_buf = chg_write_buf,
	.fallocate = chg_fallocate,
	.copy_file_range = chg_copy_file_range,
	.lseek = hotfs_lseek,
	.opendir = hotfs_opendir,
	.readdir = hotfs_readdir,
	.readdirplus = hotfs_readdirplus,
	.releasedir = hotfs_releasedir,
	.fsyncdir = hotfs_fsyncdir,
	.statfs = hotfs_statfs,
	.access = hotfs_access,
	.getxattr = hotfs_getxattr,
	.listxattr = hotfs_listxattr,
	.setxattr = chg_setxattr,
	.removexattr = chg_removexattr,
	.ioctl = chg_ioctl,
};
