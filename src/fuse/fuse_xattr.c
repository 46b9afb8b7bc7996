// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers for extended attributes and ioctls (see src/fuse/fuse_i.h):
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
#include "hotfs/fop.h"
#include "hotfs/ioctl.h"
#include "hotfs/wb.h"

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

void hotfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags)
{
	int err = -EPERM;

	/* an empty value is still a value: never NULL for setxattr */
	if (!vd_is(ino))
		err = fop_setxattr(hfs(req), hino(req, ino), name,
				   value ? value : "", size, flags);
	fuse_reply_err(req, -err);
}

void hotfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int err = -EPERM;

	if (!vd_is(ino))
		err = fop_setxattr(hfs(req), hino(req, ino), name, NULL, 0, 0);
	fuse_reply_err(req, -err);
}

/* ------------------------------------------------------------------ */
/* The file attribute ioctls (lsattr, chattr) */

/*
 * The file attribute ioctls (FS_IOC_GETFLAGS/SETFLAGS,
 * FS_IOC_FSGETXATTR/FSSETXATTR) go to the source object (fop_fileattr).
 * The kernel sends them itself (its fileattr operations) with their
 * sizes, and has checked the caller: owner or CAP_FOWNER to set, and
 * CAP_LINUX_IMMUTABLE for the append-only and immutable flags.  Other
 * ioctls cannot cross FUSE with sizes the daemon can trust (FIEMAP needs
 * unrestricted ioctls, which only CUSE may use): they get ENOTTY.
 */
static bool fileattr_cmd(unsigned int cmd)
{
	return cmd == FS_IOC_GETFLAGS || cmd == FS_IOC_SETFLAGS ||
	       cmd == FS_IOC_FSGETXATTR || cmd == FS_IOC_FSSETXATTR;
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
		return wb_flush_some(fs->wb, root ? NULL : in, since, max,
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
	union fop_fileattr out;
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
		n = fop_fileattr(fs, hino(req, ino), cmd, in_buf, in_bufsz,
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
