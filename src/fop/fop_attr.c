// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The operations on a file's attributes (hotfs/fop.h): setattr (mode,
 * owner, size, times), extended attributes set and removed, the file
 * attribute ioctls, and the end of a handle (flush, release); each change
 * in the change bracket (src/fop/fop.c), its new ctime the mount's own
 * (hotfs/stamp.h): not a change behind the mount, nor, with dirty data, a
 * conflict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <linux/fs.h>
#include <unistd.h>

#include "hotfs/fileio.h"
#include "hotfs/fop.h"

/* the attributes a setattr may change (the rest are how it is asked) */
#define SETATTR_ANY	(FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | \
			 FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE | \
			 FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | \
			 FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | \
			 FUSE_SET_ATTR_CTIME)

/* The owner: uid and gid as asked, or neither (chown(path, -1, -1) and
 * the like: the kernel sends no attribute, but the source moves its
 * ctime, as ext4 does: the same call on the source does what it does). */
static int set_owner(int fd, const struct stat *attr, int valid)
{
	uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
	gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;

	if (fchownat(fd, "", uid, gid,
		     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	return 0;
}

static int set_times(struct fop_change *ch, struct hotfs_inode *in, int fd,
		     int hfd, const struct stat *attr, int valid)
{
	struct timespec tv[2] = {
		{ .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT },
	};
	char pn[32];
	int r;

	/* writeback: no flush after this moves the times set */
	r = fop_wb_hook(ch, in, FOP_WB_FLUSH, 0);
	if (r < 0)
		return r;
	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
	snprintf(pn, sizeof(pn), "%d", fd);
	if (hfd >= 0)
		r = futimens(hfd, tv);
	else if (S_ISLNK(in->type))
		r = utimensat(fd, "", tv, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	else
		r = utimensat(ch->fs->proc_self_fd, pn, tv, 0);
	return r == -1 ? -errno : 0;
}

/* Apply a setattr to the source object (fd: its O_PATH fd) in the
 * bracket ch; -errno. */
static int set_attr(struct fop_change *ch, struct hotfs_inode *in, int fd,
		    struct hotfs_fh *fh, const struct stat *attr, int valid)
{
	struct hotfs *fs = ch->fs;
	bool opened = false;
	char pn[32];
	int r = 0, hfd = -1;

	/* through the handle where there is one (opened now if lazy), for
	 * what goes by a descriptor */
	if (fh && (valid & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_SIZE |
			    FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		hfd = fh_source(fh, fs->it, in, fs->proc_self_fd, &opened);
		if (opened)
			atomic_fetch_add_explicit(&fs->n_src_open, 1,
						  memory_order_relaxed);
		if (hfd < 0)
			return hfd;
	}
	snprintf(pn, sizeof(pn), "%d", fd);
	if (valid & FUSE_SET_ATTR_MODE) {
		if (hfd >= 0)
			r = fchmod(hfd, attr->st_mode);
		else
			r = fchmodat(fs->proc_self_fd, pn, attr->st_mode, 0);
		if (r == -1)
			return -errno;
	}
	if (!(valid & SETATTR_ANY) ||
	    (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = set_owner(fd, attr, valid);
	if (!r && (valid & FUSE_SET_ATTR_SIZE))
		r = fop_truncate(ch, in, fd, hfd, attr->st_size);
	if (!r && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
		r = set_times(ch, in, fd, hfd, attr, valid);
	return r;
}

int fop_setattr(struct hotfs *fs, struct hotfs_inode *in,
		struct hotfs_fh *fh, const struct stat *attr, int valid)
{
	struct fop_change ch;
	int err, fd;

	fop_begin(&ch, fs);
	fd = ino_fd(fs->it, in);
	err = fd;
	if (fd < 0)
		goto out;
	fop_note(&ch, NULL, in);
	/* the new ctime or mtime is the mount's own (hotfs/stamp.h) */
	fop_stamp(&ch, in, fd);
	err = set_attr(&ch, in, fd, fh, attr, valid);
	fop_settle(&ch, err);
	ino_fd_put(in);
out:
	fop_end(&ch);
	return err;
}

/*
 * Following /proc/self/fd/N reaches the object the O_PATH fd names, a
 * symlink itself included (the magic link is not followed further), so
 * the path xattr calls work for every type.
 */
int fop_setxattr(struct hotfs *fs, struct hotfs_inode *in, const char *name,
		 const char *value, size_t size, int flags)
{
	struct fop_change ch;
	char path[64];
	int fd, r;

	fop_begin(&ch, fs);
	fd = ino_fd(fs->it, in);
	r = fd;
	if (fd < 0)
		goto out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	fop_note(&ch, NULL, in);
	fop_stamp(&ch, in, fd);
	r = value ? setxattr(path, name, value, size, flags) :
		    removexattr(path, name);
	if (r == -1)
		r = -errno;
	fop_settle(&ch, r);
	ino_fd_put(in);
out:
	fop_end(&ch);
	return r;
}

_Static_assert(sizeof(struct fsxattr) <= sizeof(union fop_fileattr),
	       "a struct fsxattr fits");

/* FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR: the setters. */
static bool fileattr_set(unsigned int cmd)
{
	return cmd == FS_IOC_SETFLAGS || cmd == FS_IOC_FSSETXATTR;
}

/* The ioctl through ofd, a descriptor of in (fd: its O_PATH one); a
 * setter's in its change bracket. */
static int fileattr_call(struct hotfs *fs, struct hotfs_inode *in, int fd,
			 int ofd, unsigned int cmd, union fop_fileattr *out)
{
	struct fop_change ch;
	int r;

	if (!fileattr_set(cmd))
		return ioctl(ofd, cmd, out) == -1 ? -errno : 0;
	fop_begin(&ch, fs);
	/* its ctime moves: the mount's own change (hotfs/stamp.h) */
	fop_note(&ch, NULL, in);
	fop_stamp(&ch, in, fd);
	r = ioctl(ofd, cmd, out) == -1 ? -errno : 0;
	fop_settle(&ch, r);
	fop_end(&ch);
	return r;
}

ssize_t fop_fileattr(struct hotfs *fs, struct hotfs_inode *in,
		     unsigned int cmd, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz, union fop_fileattr *out)
{
	bool set = fileattr_set(cmd);
	size_t need = cmd == FS_IOC_GETFLAGS || cmd == FS_IOC_SETFLAGS ?
		      sizeof(int) : sizeof(struct fsxattr);
	int fd, ofd, r;

	if (!S_ISREG(in->type) && !S_ISDIR(in->type))
		return -ENOTTY;
	if (set ? in_bufsz < need : out_bufsz < need)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (set)
		memcpy(out, in_buf, need);
	fd = ino_fd(fs->it, in);
	if (fd < 0)
		return fd;
	ofd = reopen_fd(fs->proc_self_fd, fd, O_RDONLY | O_NONBLOCK |
			O_NOCTTY | (S_ISDIR(in->type) ? O_DIRECTORY : 0));
	if (ofd < 0) {
		ino_fd_put(in);
		return ofd;
	}
	r = fileattr_call(fs, in, fd, ofd, cmd, out);
	close(ofd);
	ino_fd_put(in);
	if (r < 0)
		return r;
	return set ? 0 : (ssize_t)(out_bufsz < sizeof(*out) ?
				   out_bufsz : sizeof(*out));
}

int fop_flush(struct hotfs *fs, struct hotfs_fh *fh)
{
	int fd = atomic_load(&fh->fd);
	struct fop_change ch;
	int err = 0;

	fop_begin(&ch, fs);
	/* like close(2) on the source: NFS reports write errors here; a
	 * lazy handle never opened wrote nothing */
	if (fd >= 0 && close(dup(fd)) == -1)
		err = -errno;
	fop_end(&ch);
	return err;
}

int fop_release(struct hotfs *fs, struct hotfs_inode *in,
		struct hotfs_fh *fh, int flags)
{
	/* a read-only handle's release changes nothing */
	bool wr = fop_writes(flags);
	struct fop_change ch;
	int id = 0;

	if (wr)
		fop_begin(&ch, fs);
	if (fh) {		/* none: made by create without open */
		pthread_mutex_lock(&in->m);
		if (in->op.n)
			in->op.n--;
		if (wr && in->op.w)
			in->op.w--;
		/* the kernel left the backing file before it sent this */
		if (fh->pt && in->op.pt && --in->op.pt == 0) {
			id = in->op.backing_id;
			in->op.backing_id = 0;
		}
		pthread_mutex_unlock(&in->m);
		fh_release(fs_cache(fs), in, fh);
		fh_free(fh);
	}
	if (wr)
		fop_end(&ch);
	return id;
}
