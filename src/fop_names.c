// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The operations that take names away (hotfs/fop.h): unlink, rmdir and
 * rename, in the change bracket (src/fop.c): the objects whose names go
 * pinned first (an inode made from the metadata snapshot is opened by the
 * name it had), writeback's hook for a last link, the stamps of the
 * objects whose ctime moves, the mount's own events for the source
 * watch (hotfs/watch.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#include "hotfs/fop.h"
#include "hotfs/watch.h"

/*
 * The inode of dirfd/name, if the table has one, with its fd open and in
 * use (unpin_name after): before an operation that may take that name
 * away, and that moves its ctime (fop_stamp).  An inode made from
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
int fop_unlink(struct hotfs *fs, struct hotfs_inode *dir, const char *name,
	       int flags)
{
	struct watch_own own = { 0 };
	struct hotfs_inode *in;
	struct fop_change ch;
	struct stat st;
	bool have;
	int err, pfd;

	fop_begin(&ch, fs);
	pfd = ino_fd(fs->it, dir);
	err = pfd;
	if (pfd < 0)
		goto out;
	fop_note(&ch, dir, NULL);
	in = pin_name(fs, pfd, name, &st);
	have = in || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	/* writeback: the last link's dirty data (hotfs/wb.h) */
	err = have ? fop_unlink_hook(&ch, in, &st) : 0;
	if (!err) {
		/* its link count and ctime move: the mount's own change */
		fop_stamp(&ch, in, -1);
		watch_own_add(fs->watch, &own, dir, name, IN_DELETE);
		err = unlinkat(pfd, name, flags) == -1 ? -errno : 0;
		watch_own_end(fs->watch, &own, !err);
		fop_settle(&ch, err);
	}
	unpin_name(fs, in);
	ino_fd_put(dir);
	if (!err && have)
		ino_unretain(fs->it, st.st_dev, st.st_ino);
out:
	fop_end(&ch);
	return err;
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

int fop_rename(struct hotfs *fs, struct hotfs_inode *dir, const char *name,
	       struct hotfs_inode *ndir, const char *newname,
	       unsigned int flags)
{
	struct fop_change ch;
	int err, pfd, npfd;

	fop_begin(&ch, fs);
	pfd = ino_fd(fs->it, dir);
	err = pfd;
	if (pfd < 0)
		goto out;
	npfd = ino_fd(fs->it, ndir);
	err = npfd;
	if (npfd >= 0) {
		fop_note(&ch, dir, NULL);
		fop_note(&ch, ndir, NULL);
		err = rename_at(&ch, dir, pfd, name, ndir, npfd, newname,
				flags);
		ino_fd_put(ndir);
	}
	ino_fd_put(dir);
out:
	fop_end(&ch);
	return err;
}
