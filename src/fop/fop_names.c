// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The operations on names (hotfs/fop.h): mknod, mkdir, symlink, link and
 * create, as the caller; unlink, rmdir and rename, in the change bracket
 * (fop.c): the objects whose names go pinned first (an inode made from
 * the metadata snapshot is opened by the name it had), writeback's hook
 * for a last link, the stamps of the objects whose ctime moves, the
 * mount's own events for the source watch (hotfs/watch.h).  Those that
 * make a name run their bracket over its lookup (struct fop_lookup).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#include "hotfs/fop.h"
#include "hotfs/watch.h"

/* Act as the caller (hotfs/cred.h) until as_daemon. */
static void as_caller(const struct fop_caller *w, struct cred *c)
{
	c->changed = false;
	if (w->act)
		cred_enter(&w->who, true, c);
	if (w->umask_set)
		cred_umask_enter(w->umask);
}

static void as_daemon(const struct fop_caller *w, struct cred *c)
{
	if (w->umask_set)
		cred_umask_exit();
	cred_exit(c);
}

/* mknod, mkdir, symlink of name in the directory pfd, as the caller. */
static int make_at(const struct fop_caller *who, int pfd, const char *name,
		   mode_t mode, dev_t rdev, const char *link)
{
	struct cred c;
	int r;

	as_caller(who, &c);
	if (S_ISDIR(mode))
		r = mkdirat(pfd, name, mode);
	else if (S_ISLNK(mode))
		r = symlinkat(link, pfd, name);
	else
		r = mknodat(pfd, name, mode, rdev);
	if (r == -1)
		r = -errno;
	as_daemon(who, &c);
	return r;
}

int fop_make(struct hotfs *fs, const struct fop_caller *who,
	     struct hotfs_inode *dir, const char *name, mode_t mode,
	     dev_t rdev, const char *link, const struct fop_lookup *lk)
{
	struct watch_own own = { 0 };
	struct hotfs_inode *in;
	struct fop_change ch;
	int pfd, err;

	fop_begin(&ch, fs);
	pfd = ino_fd(fs->it, dir);
	err = pfd;
	if (pfd < 0)
		goto out;
	fop_note(&ch, dir, NULL);
	watch_own_add(fs->watch, &own, dir, name, IN_CREATE);
	err = make_at(who, pfd, name, mode, rdev, link);
	watch_own_end(fs->watch, &own, !err);
	ino_fd_put(dir);
	if (!err)
		err = lk->look(lk->arg, &in);
out:
	fop_end(&ch);
	return err;
}

/* A new name in pfd for the object fd; -errno. */
static int link_at(struct hotfs *fs, int fd, int pfd, const char *name)
{
	char pn[32];
	int r;

	r = linkat(fd, "", pfd, name, AT_EMPTY_PATH);
	if (r == -1 && (errno == ENOENT || errno == EINVAL)) {
		/* no CAP_DAC_READ_SEARCH: through /proc/self/fd */
		snprintf(pn, sizeof(pn), "%d", fd);
		r = linkat(fs->proc_self_fd, pn, pfd, name, AT_SYMLINK_FOLLOW);
	}
	return r == -1 ? -errno : 0;
}

int fop_link(struct hotfs *fs, struct hotfs_inode *in,
	     struct hotfs_inode *dir, const char *name,
	     const struct fop_lookup *lk)
{
	struct watch_own own = { 0 };
	struct hotfs_inode *nin;
	struct fop_change ch;
	int err, fd, pfd;

	fop_begin(&ch, fs);
	fd = ino_fd(fs->it, in);
	err = fd;
	if (fd < 0)
		goto out;
	pfd = ino_fd(fs->it, dir);
	err = pfd;
	if (pfd >= 0) {
		fop_note(&ch, dir, in);
		/* its new link count and ctime are the mount's own */
		fop_stamp(&ch, in, fd);
		watch_own_add(fs->watch, &own, dir, name, IN_CREATE);
		err = link_at(fs, fd, pfd, name);
		watch_own_end(fs->watch, &own, !err);
		fop_settle(&ch, err);
		ino_fd_put(dir);
	}
	ino_fd_put(in);
	if (!err)
		err = lk->look(lk->arg, &nin);
out:
	fop_end(&ch);
	return err;
}

/* name in dir created or opened with flags, as the caller, in ch: the
 * fd or -errno. */
static int create_at(struct fop_change *ch, const struct fop_caller *who,
		     struct hotfs_inode *dir, const char *name, mode_t mode,
		     int flags)
{
	struct watch_own own = { 0 };
	struct hotfs *fs = ch->fs;
	struct cred c;
	bool after;
	int fd, pfd;

	pfd = ino_fd(fs->it, dir);
	if (pfd < 0)
		return pfd;
	fop_note(ch, dir, NULL);
	/* writeback's O_TRUNC: the log cut before the source */
	fd = fop_create_trunc(ch, pfd, name, &flags, &after);
	if (fd < 0) {
		ino_fd_put(dir);
		return fd;
	}
	as_caller(who, &c);
	/* (a file already there raises no event: hotfs/watch.h) */
	watch_own_add(fs->watch, &own, dir, name, IN_CREATE);
	fd = openat(pfd, name, fop_backing_flags(flags) | O_CREAT, mode);
	if (fd == -1)
		fd = -errno;
	watch_own_end(fs->watch, &own, fd >= 0);
	as_daemon(who, &c);
	ino_fd_put(dir);
	return fop_create_opened(ch, fd, after);
}

/* The created file's handle for fd (taken: closed if not kept), in the
 * bracket ch, once the lookup named in; 0 or -errno. */
static int create_handle(struct fop_change *ch, struct hotfs_inode *in,
			 int fd, struct fuse_file_info *fi)
{
	struct hotfs *fs = ch->fs;
	struct hotfs_fh *fh = NULL;

	/* without open the kernel sends no release: no handle to leak */
	if (!fs->no_open) {
		fh = fh_new(fd);
		if (!fh) {
			close(fd);
			return -ENOMEM;
		}
		fh->append = (fi->flags & O_APPEND) != 0;
	} else {
		close(fd);
		fi->noflush = 1;
	}
	if (fi->flags & O_TRUNC) {
		/* an existing file opened with O_CREAT|O_TRUNC: no old
		 * stamp, drop them all */
		fop_data_begin(ch, in, NULL, 0, 0);
		fop_data_end(ch, fs_cache(fs), 0, 0, NULL, true);
	}
	pthread_mutex_lock(&in->m);
	if (in->op.pt || atomic_load(&in->retired)) {
		/* an existing file that passthrough opens hold: no other
		 * open of this inode (see "Passthrough opens" in
		 * hotfs/fop.h); the kernel walks the path again */
		pthread_mutex_unlock(&in->m);
		ino_retire(in);
		fh_free(fh);
		return -ESTALE;
	}
	/* the kernel drops the file's pages at an open without
	 * keep_cache: not while others write it (hotfs/stamp.h,
	 * stamp_open_locked) */
	fi->keep_cache = in->op.w != 0;
	in->op.n++;
	if (fop_writes(fi->flags))
		in->op.w++;
	pthread_mutex_unlock(&in->m);
	fi->fh = (uintptr_t)fh;
	return 0;
}

int fop_create(struct hotfs *fs, const struct fop_caller *who,
	       struct hotfs_inode *dir, const char *name, mode_t mode,
	       struct fuse_file_info *fi, const struct fop_lookup *lk,
	       struct hotfs_inode **in)
{
	struct fop_change ch;
	int fd, err;

	fop_begin(&ch, fs);
	fd = create_at(&ch, who, dir, name, mode, fi->flags);
	err = fd;
	if (fd >= 0)
		err = lk->look(lk->arg, in);
	if (fd >= 0 && err)
		close(fd);
	else if (fd >= 0) {
		err = create_handle(&ch, *in, fd, fi);
		if (err)
			lk->unlook(lk->arg);
	}
	fop_end(&ch);
	return err;
}

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
