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
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

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

/*
 * The inode of dirfd/name, if the table has one, with its fd open and in
 * use (unpin_name after): before an operation that may take that name
 * away, and that moves its ctime (stamp_name_begin).  An inode made from
 * the metadata snapshot is opened by the name it still has; one whose fd
 * the budget closed is reopened by handle, since a handle finds no
 * deleted file again (ESTALE) while the kernel may still use the inode
 * (unlinked but open); once the file has no link the budget leaves its
 * fd alone.  NULL if none, or failing (stale anyway).
 */
static struct hotfs_inode *pin_name(struct hotfs *fs, int dirfd,
				    const char *name, struct stat *st)
{
	struct hotfs_inode *in;

	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == -1)
		return NULL;
	in = ino_find_hold(fs->it, st->st_dev, st->st_ino);
	if (in && ino_fd(fs->it, in) < 0) {
		ino_unhold(fs->it, in);
		in = NULL;
	}
	return in;
}

static void unpin_name(struct hotfs *fs, struct hotfs_inode *in)
{
	if (!in)
		return;
	ino_fd_put(in);
	ino_unhold(fs->it, in);
}

/* unlink and rmdir: a retained inode that lost its last name is let go */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name,
			int flags)
{
	struct hotfs *fs = hfs(req);
	struct watch_own own = { 0 };
	struct hotfs_inode *in;
	struct fop_change ch;
	struct stat st;
	bool have;
	int err, pfd;

	err = -EPERM;
	if (vd_is(parent) || vd_is_name(fs, parent, name) ||
	    mark_name(parent, name))
		goto out;
	fop_begin(&ch, fs);
	pfd = ifd(req, parent);
	err = pfd;
	if (pfd < 0)
		goto out_end;
	fop_note(&ch, hino(req, parent), NULL);
	in = pin_name(fs, pfd, name, &st);
	have = in || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	/* writeback: the last link's dirty data (hotfs/wb.h) */
	err = have ? fop_unlink_hook(&ch, in, &st) : 0;
	if (!err) {
		/* its link count and ctime move: the mount's own change */
		fop_stamp(&ch, in, -1);
		watch_own_add(fs->watch, &own, hino(req, parent), name,
			      IN_DELETE);
		err = unlinkat(pfd, name, flags) == -1 ? -errno : 0;
		watch_own_end(fs->watch, &own, !err);
		fop_settle(&ch, err);
	}
	unpin_name(fs, in);
	iput(req, parent);
	if (!err && have)
		ino_unretain(fs->it, st.st_dev, st.st_ino);
out_end:
	fop_end(&ch);
out:
	fuse_reply_err(req, -err);
}

void hotfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

void hotfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, AT_REMOVEDIR);
}

/* The mount's own name events of a rename (hotfs/watch.h). */
static void rename_own(struct hotfs_watch *w, struct watch_own *own,
		       struct hotfs_inode *dir, const char *name,
		       struct hotfs_inode *ndir, const char *newname,
		       unsigned int flags)
{
	watch_own_add(w, own, dir, name, IN_MOVED_FROM);
	watch_own_add(w, own, ndir, newname, IN_MOVED_TO);
	if (flags & RENAME_EXCHANGE) {
		watch_own_add(w, own, ndir, newname, IN_MOVED_FROM);
		watch_own_add(w, own, dir, name, IN_MOVED_TO);
	}
}

/* The rename itself, from name in dir (its fd pfd) to newname in ndir
 * (npfd); -errno. */
static int rename_at(struct fop_change *ch, struct hotfs_inode *dir,
		     int pfd, const char *name, struct hotfs_inode *ndir,
		     int npfd, const char *newname, unsigned int flags)
{
	struct watch_own own = { 0 };
	struct hotfs *fs = ch->fs;
	struct hotfs_inode *from, *to;
	struct stat st, fst;
	bool have, same, wb;
	int err;

	/* an object made from the snapshot is opened by the name it had:
	 * open it before that name is gone (both, for an exchange); a
	 * target replaced by the rename loses its name (see pin_name);
	 * the ctime of both moves */
	memset(&fst, 0, sizeof(fst));
	from = pin_name(fs, pfd, name, &fst);
	to = pin_name(fs, npfd, newname, &st);
	have = !(flags & RENAME_EXCHANGE) &&
	       (to || fstatat(npfd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0);
	/* both names of one file: the rename does nothing */
	same = have && fst.st_ino && fst.st_dev == st.st_dev &&
	       fst.st_ino == st.st_ino;
	/* writeback: a target that loses its last link (hotfs/wb.h); one
	 * that is the file renamed (a link of it) loses nothing */
	wb = have && fop_writeback(fs, NULL) && !same;
	err = wb ? fop_unlink_hook(ch, to, &st) : 0;
	if (!err) {
		fop_stamp(ch, from, -1);
		fop_stamp(ch, to, -1);
		if (!same)
			rename_own(fs->watch, &own, dir, name, ndir, newname,
				   flags);
		err = syscall(SYS_renameat2, pfd, name, npfd, newname,
			      flags) == -1 ? -errno : 0;
		watch_own_end(fs->watch, &own, !err);
		/* the stamps ended, the last first; then the hook */
		fop_settle(ch, err);
	}
	unpin_name(fs, from);
	unpin_name(fs, to);
	if (!err && have)
		ino_unretain(fs->it, st.st_dev, st.st_ino);
	return err;
}

void hotfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname,
		  unsigned int flags)
{
	struct hotfs *fs = hfs(req);
	struct fop_change ch;
	int err, pfd, npfd;

	err = -EPERM;
	if (vd_is(parent) || vd_is(newparent) ||
	    vd_is_name(hfs(req), parent, name) ||
	    vd_is_name(hfs(req), newparent, newname) ||
	    mark_name(parent, name) || mark_name(newparent, newname))
		goto out;
	fop_begin(&ch, fs);
	pfd = ifd(req, parent);
	err = pfd;
	if (pfd < 0)
		goto out_end;
	npfd = ifd(req, newparent);
	err = npfd;
	if (npfd >= 0) {
		fop_note(&ch, hino(req, parent), NULL);
		fop_note(&ch, hino(req, newparent), NULL);
		err = rename_at(&ch, hino(req, parent), pfd, name,
				hino(req, newparent), npfd, newname, flags);
		iput(req, newparent);
	}
	iput(req, parent);
out_end:
	fop_end(&ch);
out:
	fuse_reply_err(req, -err);
}
