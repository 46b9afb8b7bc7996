// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers for entries and attributes (see src/fuse/fuse_i.h): lookup,
 * forget, getattr, setattr, readlink, statfs and access.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fuse_i.h"
#include "hotfs/clock.h"
#include "hotfs/ctl.h"
#include "hotfs/fop.h"
#include "hotfs/meta_fs.h"
#include "hotfs/namecache.h"
#include "hotfs/negcache.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/watch.h"


int stat_fd(int fd, struct stat *st)
{
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	return 0;
}

/*
 * The kernel's timeouts: the long one for what the source watch covers
 * (hotfs/watch.h), unless the user set the timeouts.
 */
bool watched(struct hotfs *fs, fuse_ino_t dir)
{
	return fs->watch && !vd_is(dir) &&
	       watch_watched(hino_fs(fs, dir));
}

double entry_timeout(struct hotfs *fs, bool dir_watched)
{
	if (dir_watched && !fs->o->entry_timeout_str)
		return HOTFS_WATCH_TIMEOUT;
	return fs->o->entry_timeout;
}

double attr_timeout(struct hotfs *fs, struct hotfs_inode *in)
{
	if (fs->watch && watch_covers(in) && !fs->o->attr_timeout_str)
		return HOTFS_WATCH_TIMEOUT;
	return fs->o->attr_timeout;
}

void forget_one(struct hotfs *fs, fuse_ino_t ino, uint64_t n)
{
	if (ino == FUSE_ROOT_ID || vd_is(ino))
		return;
	ino_forget(fs->it, hino_fs(fs, ino), n);
}

/*
 * Reply with an entry whose lookup count the daemon raised: when the
 * kernel does not take it (the request was interrupted meanwhile: the
 * reply says -ENOENT), the count is dropped again, or the inode would
 * never be forgotten.
 */
void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	struct hotfs *fs = hfs(req);	/* req is gone once replied to */

	if (fuse_reply_entry(req, e) == -ENOENT && e->ino)
		forget_one(fs, e->ino, 1);
}

/* Does the daemon keep the names it found (hotfs/namecache.h)?  Not with
 * writeback: the flusher changes the source's times behind the
 * requests. */
static bool names_kept(struct hotfs *fs)
{
	return fs->o->revalidate == HOTFS_REVAL_SECONDS &&
	       fop_times_ours(fs);
}

/*
 * revalidate=N: name in dir as the source gave it less than N seconds ago,
 * nothing changed through the mount since, if hotfs still has its inode
 * (and a file's attributes still go with the stamp the inode's last check
 * took: an open that found it changed since wins).  True if e is filled.
 */
static bool names_answer(struct hotfs *fs, struct hotfs_inode *dir,
			 const char *name, struct fuse_entry_param *e)
{
	struct hotfs_inode *in;
	struct stat st;
	bool ok;

	if (!names_kept(fs) ||
	    !nc_get(dir, name, nc_gen(), clock_mono_ns(),
		    (int64_t)(fs->o->revalidate_secs * 1e9), &st))
		return false;
	in = ino_get_known(fs->it, st.st_dev, st.st_ino, st.st_mode);
	if (!in)
		return false;
	pthread_mutex_lock(&in->m);
	ok = !S_ISREG(st.st_mode) || !stamp_known_locked(in) ||
	     stamp_same_locked(in, &st);
	pthread_mutex_unlock(&in->m);
	if (!ok) {
		ino_forget(fs->it, in, 1);
		return false;
	}
	count(&fs->n_lookup_kept);
	memset(e, 0, sizeof(*e));
	e->attr = st;
	e->ino = (uintptr_t)in;
	e->attr_timeout = attr_timeout(fs, in);
	e->entry_timeout = entry_timeout(fs, false);
	return true;
}

/*
 * name in dir from the metadata snapshot (hotfs/meta_fs.h), with the
 * dirty end over the source's attributes it holds (fop_attr), as every
 * answer has it: 1 if answered (e filled, or *err), 0: ask the source.
 */
static int snapshot_lookup(struct hotfs *fs, struct hotfs_inode *dir,
			   const char *name, struct fuse_entry_param *e,
			   int *err)
{
	if (!meta_fs_lookup(fs, dir, name, e, err))
		return 0;
	if (!*err)
		fop_attr(fs, &e->attr);
	return 1;
}

/*
 * Look name up in parent and fill e.  Returns 0 or -errno.  A missing
 * name is -ENOENT; the caller decides whether to cache it negatively.
 */
int do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name,
	      struct fuse_entry_param *e)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in;
	uint64_t gen;
	int64_t asked;
	bool pw;
	int fd, pfd, err = 0;

	if (snapshot_lookup(fs, hino(req, parent), name, e, &err))
		return err;
	if (names_answer(fs, hino(req, parent), name, e))
		return 0;
	gen = nc_gen();
	asked = clock_mono_ns();
	pw = watched(fs, parent);
	memset(e, 0, sizeof(*e));
	e->entry_timeout = entry_timeout(fs, pw);
	pfd = ifd(req, parent);
	if (pfd < 0)
		return -errno;
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	err = fd == -1 ? -errno : 0;
	iput(req, parent);
	if (err)
		return err;
	err = stat_fd(fd, &e->attr);
	if (err) {
		close(fd);
		return err;
	}
	fop_attr(fs, &e->attr);
	in = ino_get(fs->it, fd, &e->attr, &err);
	if (!in)
		return err;
	if (S_ISDIR(e->attr.st_mode)) {
		watch_cover_dir(fs->watch, in);
		meta_fs_attach(fs, in);
	}
	else
		watch_cover_file(in, pw && e->attr.st_nlink == 1);
	e->attr_timeout = attr_timeout(fs, in);
	e->ino = (uintptr_t)in;
	if (names_kept(fs))
		nc_add(hino(req, parent), name, &e->attr, gen, asked);
	return 0;
}

static int look_new(void *arg, struct hotfs_inode **in)
{
	struct new_entry *n = arg;
	int err;

	err = do_lookup(n->req, n->parent, n->name, &n->e);
	if (!err)
		*in = hino(n->req, n->e.ino);
	return err;
}

static void unlook_new(void *arg)
{
	struct new_entry *n = arg;

	forget_one(hfs(n->req), n->e.ino, 1);
}

/*
 * dir's entries changed through the mount (its mtime, ctime, maybe its
 * link count moved): its attributes invalidated before the reply.  The
 * kernel drops them itself when the reply comes, but not the answer to a
 * getattr another process had in flight across the change (the source
 * read before it): applied after, that answer would stand for the whole
 * attribute timeout.  An invalidation from here moves the inode's
 * attribute version, and the kernel ignores an answer to a request sent
 * before it.  Attributes only (offset < 0): the kernel takes no lock of
 * its own for that, none that the request in flight holds.
 */
void dir_changed(fuse_req_t req, fuse_ino_t dir)
{
	fuse_lowlevel_notify_inval_inode(hfs(req)->se, dir, -1, 0);
}

void new_entry_lookup(struct new_entry *n, struct fop_lookup *lk,
		      fuse_req_t req, fuse_ino_t parent, const char *name)
{
	memset(n, 0, sizeof(*n));
	n->req = req;
	n->parent = parent;
	n->name = name;
	lk->look = look_new;
	lk->unlook = unlook_new;
	lk->arg = n;
}

void hotfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hotfs_inode *dir = hino(req, parent);
	struct fuse_entry_param e;
	struct stat dst;
	bool stamped;
	int64_t now = 0;
	int err, dfd;

	if (vd_is(parent) || vd_is_name(hfs(req), parent, name)) {
		vd_lookup(req, parent, name);
		return;
	}
	err = -ENOENT;		/* the mark: no entry, and none kept */
	if (mark_name(parent, name))
		goto out;
	count(&hfs(req)->n_lookup);
	count_uring(req);
	if (snapshot_lookup(hfs(req), dir, name, &e, &err))
		goto reply;
	dfd = ino_fd(hfs(req)->it, dir);
	err = dfd;
	if (dfd < 0)
		goto reply;
	/* the directory's stamp before the lookup (no disk: its inode is
	 * held open), the clock read before it: the racy rule holds from
	 * when the stamp was taken (hotfs/stamp.h), a lookup held up after
	 * it past the window still proves nothing of a change in its tick */
	now = clock_real_ns();
	stamped = !hotfs_src.remote && fstat(dfd, &dst) == 0;
	ino_fd_put(dir);
	if (stamped && neg_hit(dir, &dst, name)) {
		err = -ENOENT;
	} else {
		err = do_lookup(req, parent, name, &e);
		if (err == -ENOENT && stamped && !stamp_racy(&dst, now))
			neg_add(dir, &dst, name);
	}
reply:
	if (err == -ENOENT) {
		/* a negative entry: git probes many absent names */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = entry_timeout(hfs(req),
						watched(hfs(req), parent));
		/* a remote source: another client's create must be seen at
		 * the next lookup, as on the lower mount itself */
		if (hotfs_src.remote && !hfs(req)->o->entry_timeout_str)
			e.entry_timeout = 0;
		err = 0;
	}
out:
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_entry(req, &e);
}


void hotfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(hfs(req), ino, nlookup);
	fuse_reply_none(req);
}

void hotfs_forget_multi(fuse_req_t req, size_t count,
			struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget_one(hfs(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ------------------------------------------------------------------ */
/* Attributes */

/*
 * The attributes of ino now, in *st: from the open handle, the metadata
 * snapshot, or the source.  *changed: a regular file changed behind the
 * mount (its cached pages must go: the kernel's own check on a new mtime
 * is off, hotfs/stamp.h); the inode is then held until the caller has
 * sent the invalidation.  0 or -errno.
 */
static int get_attr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct stat *st, bool *changed)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in = hino(req, ino);
	bool fresh = true, held = false;
	int err, fd = -1;

	*changed = false;
	count(&fs->n_getattr);
	count_uring(req);
	if (fi && fi->fh && fhfd(fi) >= 0) {
		fd = fhfd(fi);
		err = fstat(fd, st) == -1 ? -errno : 0;
	} else if (meta_fs_getattr(fs, in, st)) {
		err = 0;
		fresh = false;
	} else {
		fd = ifd(req, ino);
		held = fd >= 0;
		err = fd < 0 ? fd : stat_fd(fd, st);
	}
	if (!err && !S_ISDIR(st->st_mode) && st->st_nlink != 1)
		watch_cover_file(in, false);	/* a link elsewhere */
	if (!err)
		fop_attr(fs, st);
	if (!err)
		*changed = fresh && S_ISREG(st->st_mode) &&
			   fs->o->revalidate != HOTFS_REVAL_NEVER &&
			   stamp_check_fd(in, fd) == STAMP_CHANGED;
	/* the reply may be the kernel's last use of the inode (a forget
	 * can free it right after): held until the change is sent */
	if (*changed)
		ino_hold(fs->it, in);
	if (held)	/* after its last use above */
		iput(req, ino);
	return err;
}

/* Reply with ino's attributes (getattr, and after a setattr). */
static void reply_attr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in = hino(req, ino);
	struct stat st;
	bool changed;
	int err;

	err = get_attr(req, ino, fi, &st, &changed);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, attr_timeout(fs, in));
	if (changed) {
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
		stamp_inval_sent(in);
		ino_unhold(fs->it, in);
	}
}

void hotfs_getattr(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	if (vd_is(ino))
		vd_getattr(req, ino);
	else
		reply_attr(req, ino, fi);
}

/* A setattr of a control file: without open, ctl's O_TRUNC comes as a
 * setattr; nothing to cut (its answers are not truncated by an open
 * either).  Anything else is refused. */
static void setattr_virtual(fuse_req_t req, fuse_ino_t ino,
			    struct stat *attr, int valid)
{
	if (hfs(req)->no_open && ino == VINO_CTL &&
	    !(valid & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME |
			FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)) &&
	    (!(valid & FUSE_SET_ATTR_SIZE) || attr->st_size == 0))
		vd_getattr(req, ino);
	else
		fuse_reply_err(req, EPERM);
}

void hotfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int valid, struct fuse_file_info *fi)
{
	int err;

	if (vd_is(ino)) {	/* ctl.c replies for the control files */
		setattr_virtual(req, ino, attr, valid);
		return;
	}
	if (fi && !fi->fh)	/* no open: by the inode */
		fi = NULL;
	err = fop_setattr(hfs(req), hino(req, ino), fi ? hfh(fi) : NULL, attr,
			  valid);
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_attr(req, ino, fi);
}

/* The symlink's target into buf (PATH_MAX + 1 bytes); -errno. */
static int read_link(fuse_req_t req, fuse_ino_t ino, char *buf)
{
	ssize_t n;
	int fd;

	fd = ifd(req, ino);
	if (fd < 0)
		return fd;
	n = readlinkat(fd, "", buf, PATH_MAX + 1);
	if (n == -1)
		n = -errno;
	iput(req, ino);
	if (n < 0)
		return (int)n;
	if (n == PATH_MAX + 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

void hotfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	const char *t = NULL;
	int err = -EINVAL;

	if (!vd_is(ino)) {
		t = meta_fs_readlink(hfs(req), hino(req, ino));
		err = 0;
		if (!t) {
			err = read_link(req, ino, buf);
			t = buf;
		}
	}
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_readlink(req, t);
}

void hotfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int fd, err;

	if (vd_is(ino))
		ino = FUSE_ROOT_ID;
	fd = ifd(req, ino);
	err = fd;
	if (fd >= 0) {
		err = fstatvfs(fd, &sv) == -1 ? -errno : 0;
		iput(req, ino);
	}
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_statfs(req, &sv);
}

void hotfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct hotfs *fs = hfs(req);
	struct cred c;
	char pn[32];
	int err, fd;

	if (vd_is(ino)) {
		err = (mask & W_OK) && ino != VINO_CTL ? -EACCES : 0;
		goto out;
	}
	fd = ifd(req, ino);
	err = fd;
	if (fd < 0)
		goto out;
	procname(pn, sizeof(pn), fd);
	as_caller(req, &c);
	err = faccessat(fs->proc_self_fd, pn, mask, AT_EACCESS) == -1 ?
	      -errno : 0;
	as_daemon(&c);
	iput(req, ino);
out:
	fuse_reply_err(req, -err);
}
