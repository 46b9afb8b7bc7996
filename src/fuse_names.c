// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers that create and remove names (see src/fuse_i.h): mknod,
 * mkdir, symlink, link, unlink, rmdir and rename.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuse_i.h"
#include "hotfs/ctl.h"
#include "hotfs/fop.h"
#include "hotfs/watch.h"

/* The answer to a create of a name: its entry (its lookup count raised),
 * or the error. */
static void reply_new(fuse_req_t req, int err,
		      const struct fuse_entry_param *e)
{
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_entry(req, e);
}

/* mknod, mkdir, symlink of name in the directory pfd, as the caller. */
static int make_at(fuse_req_t req, int pfd, const char *name, mode_t mode,
		   dev_t rdev, const char *link)
{
	struct cred c;
	int r;

	as_caller(req, &c);
	caller_umask(req);
	if (S_ISDIR(mode))
		r = mkdirat(pfd, name, mode);
	else if (S_ISLNK(mode))
		r = symlinkat(link, pfd, name);
	else
		r = mknodat(pfd, name, mode, rdev);
	if (r == -1)
		r = -errno;
	daemon_umask(req);
	as_daemon(&c);
	return r;
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, const char *link)
{
	struct watch_own own = { 0 };
	struct fuse_entry_param e;
	struct fop_change ch;
	int pfd, err;

	if (vd_is(parent) || vd_is_name(hfs(req), parent, name) ||
	    mark_name(parent, name)) {
		err = vd_is(parent) ? -EACCES : mark_name(parent, name) ?
		      -EPERM : -EEXIST;
		goto out;
	}
	fop_begin(&ch, hfs(req));
	pfd = ifd(req, parent);
	err = pfd;
	if (pfd < 0)
		goto out_end;
	fop_note(&ch, hino(req, parent), NULL);
	watch_own_add(hfs(req)->watch, &own, hino(req, parent), name,
		      IN_CREATE);
	err = make_at(req, pfd, name, mode, rdev, link);
	watch_own_end(hfs(req)->watch, &own, !err);
	iput(req, parent);
	if (!err)
		err = do_lookup(req, parent, name, &e);
out_end:
	fop_end(&ch);
out:
	reply_new(req, err, &e);
}

void hotfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, mode, rdev, NULL);
}

void hotfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | mode, 0, NULL);
}

void hotfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name)
{
	make_node(req, parent, name, S_IFLNK, 0, link);
}

/* A new name in pfd for the object fd; -errno. */
static int link_at(struct hotfs *fs, int fd, int pfd, const char *name)
{
	char pn[32];
	int r;

	r = linkat(fd, "", pfd, name, AT_EMPTY_PATH);
	if (r == -1 && (errno == ENOENT || errno == EINVAL)) {
		/* no CAP_DAC_READ_SEARCH: through /proc/self/fd */
		procname(pn, sizeof(pn), fd);
		r = linkat(fs->proc_self_fd, pn, pfd, name, AT_SYMLINK_FOLLOW);
	}
	return r == -1 ? -errno : 0;
}

void hotfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		const char *name)
{
	struct hotfs *fs = hfs(req);
	struct watch_own own = { 0 };
	struct fuse_entry_param e;
	struct fop_change ch;
	int err, fd, pfd;

	if (vd_is(ino) || vd_is(parent) ||
	    vd_is_name(hfs(req), parent, name) || mark_name(parent, name)) {
		err = vd_is(ino) || mark_name(parent, name) ? -EPERM :
		      vd_is(parent) ? -EACCES : -EEXIST;
		goto out;
	}
	fop_begin(&ch, fs);
	fd = ifd(req, ino);
	err = fd;
	if (fd < 0)
		goto out_end;
	pfd = ifd(req, parent);
	err = pfd;
	if (pfd >= 0) {
		fop_note(&ch, hino(req, parent), hino(req, ino));
		/* its new link count and ctime are the mount's own */
		fop_stamp(&ch, hino(req, ino), fd);
		watch_own_add(fs->watch, &own, hino(req, parent), name,
			      IN_CREATE);
		err = link_at(fs, fd, pfd, name);
		watch_own_end(fs->watch, &own, !err);
		fop_settle(&ch, err);
		iput(req, parent);
	}
	iput(req, ino);
	if (!err)
		err = do_lookup(req, parent, name, &e);
out_end:
	fop_end(&ch);
out:
	reply_new(req, err, &e);
}

void hotfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err = -EPERM;

	if (!vd_is(parent) && !vd_is_name(hfs(req), parent, name) &&
	    !mark_name(parent, name))
		err = fop_unlink(hfs(req), hino(req, parent), name, 0);
	fuse_reply_err(req, -err);
}

void hotfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err = -EPERM;

	if (!vd_is(parent) && !vd_is_name(hfs(req), parent, name) &&
	    !mark_name(parent, name))
		err = fop_unlink(hfs(req), hino(req, parent), name,
				 AT_REMOVEDIR);
	fuse_reply_err(req, -err);
}

void hotfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname,
		  unsigned int flags)
{
	int err = -EPERM;

	if (!vd_is(parent) && !vd_is(newparent) &&
	    !vd_is_name(hfs(req), parent, name) &&
	    !vd_is_name(hfs(req), newparent, newname) &&
	    !mark_name(parent, name) && !mark_name(newparent, newname))
		err = fop_rename(hfs(req), hino(req, parent), name,
				 hino(req, newparent), newname, flags);
	fuse_reply_err(req, -err);
}
