// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers for extended attributes and ioctls (see src/fuse_i.h):
 * getxattr, listxattr, setxattr, removexattr; the file attribute ioctls
 * passed to the source, and hotfsctl's own (hotfs/ioctl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <linux/fs.h>
#include <unistd.h>

#include "fuse_i.h"
#include "hotfs/cache_ctl.h"
#include "hotfs/ctl.h"
#include "hotfs/fileio.h"
#include "hotfs/ioctl.h"
#include "hotfs/wb.h"
#include "hotfs/meta_fs.h"
#include "hotfs/stamp.h"

/*
 * Following /proc/self/fd/N reaches the object the O_PATH fd names, a
 * symlink itself included (the magic link is not followed further), so
 * the path xattr calls work for every type.  The inode's fd with the
 * path in buf (the fd in use until ino_fd_put), or -errno (a name gone
 * from the source).
 */
static int xattr_path(fuse_req_t req, struct hotfs_inode *in, char *buf,
		      size_t len)
{
	int fd = ino_fd(hfs(req)->it, in);

	if (fd < 0)
		return fd;
	snprintf(buf, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* getxattr (name) or listxattr (name == NULL) of in into value (size
 * bytes; 0: the size it needs); the size or -errno. */
static ssize_t get_or_list(fuse_req_t req, struct hotfs_inode *in,
			   const char *name, char *value, size_t size)
{
	char path[64];
	ssize_t n;

	n = xattr_path(req, in, path, sizeof(path));
	if (n < 0)
		return n;
	n = name ? getxattr(path, name, value, size) :
		   listxattr(path, value, size);
	if (n == -1)
		n = -errno;
	ino_fd_put(in);
	return n;
}

/* getxattr (name) or listxattr (name == NULL) on the source object */
static void get_or_list_xattr(fuse_req_t req, fuse_ino_t ino,
			      const char *name, size_t size)
{
	char *value = NULL;
	ssize_t n = -ENOMEM;

	if (vd_is(ino))		/* nothing on the control files */
		n = name ? -ENODATA : 0;
	else if (!size || (value = malloc(size)))
		n = get_or_list(req, hino(req, ino), name, value, size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, value, (size_t)n);
	free(value);
}

void hotfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    size_t size)
{
	get_or_list_xattr(req, ino, name, size);
}

void hotfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	get_or_list_xattr(req, ino, NULL, size);
}

/* setxattr (value) or removexattr (value == NULL) on the source object;
 * -errno.  Its ctime moves. */
static int set_or_remove(fuse_req_t req, fuse_ino_t ino, const char *name,
			 const char *value, size_t size, int flags)
{
	struct hotfs_inode *in = hino(req, ino);
	char path[64];
	int fd, r;

	if (vd_is(ino))
		return -EPERM;
	fd = xattr_path(req, in, path, sizeof(path));
	if (fd < 0)
		return fd;
	meta_fs_change(hfs(req), NULL, in);
	/* the new ctime is the mount's own (hotfs/stamp.h): not a change
	 * behind it, nor, with dirty data, a conflict */
	stamp_begin(in, fd);
	r = value ? setxattr(path, name, value, size, flags) :
		    removexattr(path, name);
	if (r == -1)
		r = -errno;
	stamp_end(in, fd);
	ino_fd_put(in);
	return r;
}

void hotfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags)
{
	/* an empty value is still a value: never NULL for setxattr */
	fuse_reply_err(req, -set_or_remove(req, ino, name, value ? value : "",
					   size, flags));
}

void hotfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, -set_or_remove(req, ino, name, NULL, 0, 0));
}

/* ------------------------------------------------------------------ */
/* The file attribute ioctls (lsattr, chattr) */

/*
 * FS_IOC_GETFLAGS/SETFLAGS and FS_IOC_FSGETXATTR/FSSETXATTR on the source
 * object, through a descriptor opened on it for the call (ioctl needs one
 * that is not O_PATH).  The kernel sends them itself (its fileattr
 * operations) with their sizes: a flags word as an int, a struct fsxattr.
 * It has also checked the caller: owner or CAP_FOWNER to set, and
 * CAP_LINUX_IMMUTABLE for the append-only and immutable flags.  Other
 * ioctls cannot cross FUSE with sizes the daemon can trust (FIEMAP needs
 * unrestricted ioctls, which only CUSE may use): they get ENOTTY.
 * Returns the bytes of *out to reply with, or -errno.
 */
union fileattr_buf {
	int flags;
	struct fsxattr fsx;
	char bytes[32];
};

static bool fileattr_cmd(unsigned int cmd)
{
	return cmd == FS_IOC_GETFLAGS || cmd == FS_IOC_SETFLAGS ||
	       cmd == FS_IOC_FSGETXATTR || cmd == FS_IOC_FSSETXATTR;
}

static ssize_t fileattr_ioctl(struct hotfs *fs, struct hotfs_inode *in,
			      unsigned int cmd, const void *in_buf,
			      size_t in_bufsz, size_t out_bufsz,
			      union fileattr_buf *out)
{
	bool set = cmd == FS_IOC_SETFLAGS || cmd == FS_IOC_FSSETXATTR;
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
	if (set) {
		/* its ctime moves: the mount's own change (hotfs/stamp.h) */
		meta_fs_change(fs, NULL, in);
		stamp_begin(in, fd);
	}
	r = ioctl(ofd, cmd, out) == -1 ? -errno : 0;
	if (set)
		stamp_end(in, fd);
	close(ofd);
	ino_fd_put(in);
	if (r < 0)
		return r;
	return set ? 0 : (ssize_t)(out_bufsz < sizeof(*out) ?
				   out_bufsz : sizeof(*out));
}

/* ------------------------------------------------------------------ */
/* hotfsctl */

/* hotfsctl's request cmd (io decoded) on in, from uid; -errno. */
static int ctl_request(struct hotfs *fs, uid_t uid, struct hotfs_inode *in,
		       bool root, unsigned int cmd, struct hotfs_ioc *io)
{
	struct hotfs_cache *c = fs_cache(fs);
	int r;

	/* the control channel: root and the mounting user only */
	if (uid != 0 && uid != fs->owner_uid)
		return -EACCES;
	if (cmd == HOTFS_IOC_FLUSH && (root || S_ISREG(in->type))) {
		uint64_t max = io->len;
		int64_t since = io->off > INT64_MAX ? INT64_MAX :
				(int64_t)io->off;

		memset(io, 0, sizeof(*io));
		return wb_flush_some(fs, root ? NULL : in, since, max,
				     &io->done, &io->bytes, &io->size);
	}
	if (!S_ISREG(in->type))
		return S_ISDIR(in->type) ? -EISDIR : -EINVAL;
	if (!c) {
		memset(io, 0, sizeof(*io));
		io->flags = HOTFS_IOC_F_NOCACHE;
		return cmd == HOTFS_IOC_INFO ? 0 : -EOPNOTSUPP;
	}
	switch (cmd) {
	case HOTFS_IOC_WARM:
		return cache_warm(c, in, io);
	case HOTFS_IOC_EVICT:
		return cache_evict(c, in, io);
	case HOTFS_IOC_PIN:
	case HOTFS_IOC_UNPIN:
		r = cache_pin(c, in, cmd == HOTFS_IOC_PIN);
		return r ? r : cache_info(c, in, io);
	case HOTFS_IOC_INFO:
		return cache_info(c, in, io);
	}
	return -ENOTTY;
}

void hotfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		 void *arg, struct fuse_file_info *fi, unsigned flags,
		 const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct hotfs *fs = hfs(req);
	union fileattr_buf out;
	struct hotfs_ioc io;
	const void *reply = &io;
	ssize_t n = sizeof(io);
	int r;

	(void)arg;
	(void)fi;
	r = -ENOTTY;
	if (vd_is(ino))
		goto out;
	if (fileattr_cmd(cmd) && !(flags & FUSE_IOCTL_COMPAT)) {
		n = fileattr_ioctl(fs, hino(req, ino), cmd, in_buf, in_bufsz,
				   out_bufsz, &out);
		r = n < 0 ? (int)n : 0;
		reply = n ? (const void *)&out : NULL;
		goto out;
	}
	r = ctl_ioc_decode(cmd, flags, in_buf, in_bufsz, out_bufsz, &io);
	if (!r)
		r = ctl_request(fs, fuse_req_ctx(req)->uid, hino(req, ino),
				ino == FUSE_ROOT_ID, cmd, &io);
out:
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, reply, (size_t)n);
}
