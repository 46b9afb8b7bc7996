// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers that create and remove names (see src/fuse/fuse_i.h): mknod,
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

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, const char *link)
{
	struct fop_lookup lk;
	struct fop_caller who;
	struct new_entry n;
	int err;

	new_entry_lookup(&n, &lk, req, parent, name);
	if (vd_is(parent) || vd_is_name(hfs(req), parent, name) ||
	    mark_name(parent, name)) {
		err = vd_is(parent) ? -EACCES : mark_name(parent, name) ?
		      -EPERM : -EEXIST;
		goto out;
	}
	caller_of(req, &who);
	err = fop_make(hfs(req), &who, hino(req, parent), name, mode, rdev,
		       link, &lk);
	if (!err)
		dir_changed(req, parent);
out:
	reply_new(req, err, &n.e);
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

void hotfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		const char *name)
{
	struct fop_lookup lk;
	struct new_entry n;
	int err;

	new_entry_lookup(&n, &lk, req, parent, name);
	if (vd_is(ino) || vd_is(parent) ||
	    vd_is_name(hfs(req), parent, name) || mark_name(parent, name)) {
		err = vd_is(ino) || mark_name(parent, name) ? -EPERM :
		      vd_is(parent) ? -EACCES : -EEXIST;
		goto out;
	}
	err = fop_link(hfs(req), hino(req, ino), hino(req, parent), name,
		       &lk);
	if (!err)
		dir_changed(req, parent);
out:
	reply_new(req, err, &n.e);
}

void hotfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err = -EPERM;

	if (!vd_is(parent) && !vd_is_name(hfs(req), parent, name) &&
	    !mark_name(parent, name))
		err = fop_unlink(hfs(req), hino(req, parent), name, 0);
	if (!err)
		dir_changed(req, parent);
	fuse_reply_err(req, -err);
}

void hotfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err = -EPERM;

	if (!vd_is(parent) && !vd_is_name(hfs(req), parent, name) &&
	    !mark_name(parent, name))
		err = fop_unlink(hfs(req), hino(req, parent), name,
				 AT_REMOVEDIR);
	if (!err)
		dir_changed(req, parent);
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
	if (!err)
		dir_changed(req, parent);
	if (!err && newparent != parent)
		dir_changed(req, newparent);
	fuse_reply_err(req, -err);
}
