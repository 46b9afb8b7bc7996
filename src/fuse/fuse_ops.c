// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE low-level operations table and FUSE_INIT.  The handlers are
 * in src/fuse_*.c (src/fuse/fuse_i.h says which file holds what); each decodes
 * the request, calls the core (the file operations, hotfs/fop.h, for
 * what reads or changes a file; the source through *at() syscalls on the
 * inode's O_PATH fd, or the cache), and replies exactly once.
 *
 * Modelled on libfuse's example/passthrough_ll.c and passthrough_hp.cc.
 * Decisions a user may need to know (also in man/hotfs.8):
 *  - st_ino, nlink, sizes and times are the source's, unchanged.
 *  - When the daemon runs as root, operations that create objects run
 *    with the caller's credentials (hotfs/cred.h).
 */
#include "fuse_i.h"
#include "hotfs/bdi.h"
#include "hotfs/cache.h"
#include "hotfs/log.h"
#include "hotfs/watch.h"



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

/* Passthrough (hotfs/passthrough.h), if pt_decide asked for it, the
 * copies are there and the kernel offers it; said once in the log where
 * it is on, or asked for (on, or auto on Btrfs) and off; the stats say
 * it always. */
static void init_passthrough(struct hotfs *fs, struct fuse_conn_info *conn)
{
	struct hotfs_cache *c = fs_cache(fs);
	const char *why = fs->o->passthrough_why;
	bool on = fs->o->passthrough_on;

	if (on && fs->no_open) {
		on = false;	/* no opens to answer with a copy */
		why = "off: revalidate=never sends no opens";
	}
	if (on && !(c && c->fc)) {
		on = false;
		why = "off: the cachedir's files/ could not be opened (the "
		      "log says why)";
	}
#ifdef FUSE_CAP_PASSTHROUGH
	if (on && !(conn->capable & FUSE_CAP_PASSTHROUGH)) {
		on = false;
		why = "off: the kernel did not offer it";
	}
	if (on) {
		conn->want |= FUSE_CAP_PASSTHROUGH;
		/* backing files on a plain filesystem, the cachedir's */
		conn->max_backing_stack_depth = 1;
	}
#else
	(void)conn;
#endif
	atomic_store(&fs->passthrough, on);
	atomic_store(&fs->pt_why, why ? why : "off");
	if (on || fs->o->passthrough == HOTFS_PT_ON ||
	    (fs->o->passthrough == HOTFS_PT_AUTO &&
	     fs->o->passthrough_checked))
		hotfs_log(on ? LOG_INFO : LOG_NOTICE, "passthrough: %s\n",
			  why ? why : "off");
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
	     (fs->watch && watch_watched(ino_root(fs->it)) &&
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
	init_passthrough(fs, conn);
#ifdef FUSE_CAP_OVER_IO_URING
	/* no handler here looks at fuse_req_interrupted(), and libfuse
	 * keeps each FUSE_INTERRUPT of a request that came through the
	 * io_uring queues for good (it finds no such request on its list):
	 * a leak per interrupted request.  Told so, libfuse answers the
	 * first with ENOSYS and the kernel sends no more; a request is
	 * answered when its handler ends, as it always was */
	conn->no_interrupt = 1;
	/* libfuse asks for it when told to (-o io_uring) and offered */
	if (fs->o->fuse_uring_asked && !(conn->capable &
					 FUSE_CAP_OVER_IO_URING))
		fs->o->fuse_uring_why = "off: the kernel did not offer it";
#endif
}

const struct fuse_lowlevel_ops hotfs_ll_ops = {
	.init = hotfs_init,
	.lookup = hotfs_lookup,
	.forget = hotfs_forget,
	.forget_multi = hotfs_forget_multi,
	.getattr = hotfs_getattr,
	.setattr = hotfs_setattr,
	.readlink = hotfs_readlink,
	.mknod = hotfs_mknod,
	.mkdir = hotfs_mkdir,
	.symlink = hotfs_symlink,
	.link = hotfs_link,
	.unlink = hotfs_unlink,
	.rmdir = hotfs_rmdir,
	.rename = hotfs_rename,
	.open = hotfs_open,
	.create = hotfs_create,
	.release = hotfs_release,
	.flush = hotfs_flush,
	.fsync = hotfs_fsync,
	.read = hotfs_read,
	.write_buf = hotfs_write_buf,
	.fallocate = hotfs_fallocate,
	.copy_file_range = hotfs_copy_file_range,
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
	.setxattr = hotfs_setxattr,
	.removexattr = hotfs_removexattr,
	.ioctl = hotfs_ioctl,
};
