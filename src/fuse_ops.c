// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE low-level handlers: decode the request, call the source through
 * *at() syscalls on the inode's O_PATH fd, reply exactly once.
 *
 * Modelled on libfuse's example/passthrough_ll.c and passthrough_hp.cc.
 * Decisions a user may need to know (also in man/hotfs.8):
 *  - st_ino, nlink, sizes and times are the source's, unchanged.
 *  - When the daemon runs as root, operations that create objects run with
 *    the caller's fsuid, fsgid and supplementary groups (per thread), so
 *    new files are owned as on a local filesystem and the source applies
 *    its own rules (setgid directories, ACL defaults).
 *  - O_DIRECT is honoured by the kernel (it sends the I/O to us without
 *    caching); the daemon's own fd on the source is opened without it, so
 *    unaligned request buffers are fine.
 *  - flock() and POSIX locks are kept by the kernel for the mount: they
 *    are coherent between processes using the mount, not with processes
 *    that use the source directly.
 *
 * No lock is held across a reply or across source I/O.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hotfs/bdi.h"
#include "hotfs/ctl.h"
#include "hotfs/fs.h"
#include "hotfs/ioctl.h"
#include "hotfs/log.h"
#include "hotfs/meta_fs.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/watch.h"

static struct hotfs *hfs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct hotfs_inode *hino_fs(struct hotfs *fs, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return ino_root(fs->it);
	return (struct hotfs_inode *)(uintptr_t)ino;
}

static struct hotfs_inode *hino(fuse_req_t req, fuse_ino_t ino)
{
	return hino_fs(hfs(req), ino);
}

/* The inode's source fd, opened now if it was made from the metadata
 * snapshot or closed for the fd budget; -1 with errno if its name is
 * gone.  In use until iput(req, ino) (ino_fd_put). */
static int ifd(fuse_req_t req, fuse_ino_t ino)
{
	return ino_fd(hfs(req)->it, hino(req, ino));
}

static void iput(fuse_req_t req, fuse_ino_t ino)
{
	ino_fd_put(hino(req, ino));
}

static struct hotfs_fh *hfh(struct fuse_file_info *fi)
{
	return (struct hotfs_fh *)(uintptr_t)fi->fh;
}

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The name of fd under /proc/self/fd (fs->proc_self_fd). */
static void procname(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "%d", fd);
}

/*
 * The source file of an open handle.  A lazy handle (an open that
 * revalidate=N answered without the source, see hotfs_open) opens it at
 * its first use; -1 with errno if that fails.
 */
static int fh_src(struct hotfs *fs, struct hotfs_inode *in,
		  struct fuse_file_info *fi)
{
	struct hotfs_fh *fh = hfh(fi);
	char pn[32];
	int fd = atomic_load(&fh->fd), pfd, err = 0;

	if (fd >= 0 || !fh->lazy)
		return fd;
	pthread_mutex_lock(&fh->m);
	fd = atomic_load(&fh->fd);
	if (fd < 0) {
		pfd = ino_fd(fs->it, in);
		if (pfd < 0) {
			err = errno;
		} else {
			procname(pn, sizeof(pn), pfd);
			fd = openat(fs->proc_self_fd, pn, fh->lazy_flags);
			err = fd == -1 ? errno : 0;
			ino_fd_put(in);
		}
		if (fd >= 0) {
			atomic_store(&fh->fd, fd);
			count(&fs->n_src_open);
		}
	}
	pthread_mutex_unlock(&fh->m);
	if (fd < 0)
		errno = err;
	return fd;
}

/* The source fd of a handle, opened or not (-1: not yet, lazy). */
static int fhfd(struct fuse_file_info *fi)
{
	return atomic_load(&hfh(fi)->fd);
}

/*
 * Files without open round trips (fs->no_open).  With revalidate=never
 * nothing is checked when a file is opened, so the daemon answers the
 * first open ENOSYS (FUSE_CAP_NO_OPEN_SUPPORT): the kernel then sends no
 * open and no release for the rest of the connection, and, answered
 * ENOSYS once, no flush.  Reading a small cached file costs a lookup and
 * a read instead of four round trips.  Requests then come with fh 0: each
 * opens the source for itself (src_fd, from the inode's O_PATH fd: no
 * path walk, no disk read) and closes it after (src_done, which reports
 * a failed close as NFS would at close(2)); reads share the inode's
 * handle for counting accesses (cache.h, NOFH_WINDOW_NS), and O_TRUNC
 * comes as a setattr (atomic_o_trunc is off).  The control files keep
 * snapshots instead (src/ctl.c).  Handles opened before the first
 * ENOSYS (control files) are freed at exit.
 */
static int src_fd(struct hotfs *fs, struct hotfs_inode *in,
		  struct fuse_file_info *fi, int flags, bool *tmp)
{
	char pn[32];
	int fd;

	*tmp = !(fi && fi->fh);
	if (!*tmp)
		return fh_src(fs, in, fi);
	fd = ino_fd(fs->it, in);
	if (fd < 0)
		return -1;
	procname(pn, sizeof(pn), fd);
	fd = openat(fs->proc_self_fd, pn, flags | O_CLOEXEC);
	ino_fd_put(in);
	return fd;
}

/* Close what src_fd opened; -errno of a failed close, else 0. */
static int src_done(int fd, bool tmp)
{
	return tmp && fd >= 0 && close(fd) == -1 && errno != EINTR ?
	       -errno : 0;
}

/* The flags a handle-less write's own fd needs. */
static int write_flags(const struct fuse_file_info *fi)
{
	return O_WRONLY | (fi->flags & (O_APPEND | O_SYNC | O_DSYNC));
}

/* ------------------------------------------------------------------ */
/* Acting as the caller */

struct cred {
	bool changed;
};

#define MAX_GROUPS 256

/*
 * Switch this thread's fs credentials to the caller's.  setfsuid/setfsgid
 * and the raw setgroups syscall are per thread (glibc's setgroups()
 * wrapper would change every thread of the process).
 */
/*
 * The caller's umask, applied by the source filesystem itself: the kernel
 * sends modes unmasked (FUSE_CAP_DONT_MASK) so that a directory's default
 * ACL, which overrides the umask, works as on a local filesystem.  The
 * umask is per process; a worker thread gets its own with
 * unshare(CLONE_FS) (hotfs never changes directory, so nothing else in
 * the fs_struct matters).
 */
static __thread bool own_fs;

static void umask_enter(fuse_req_t req)
{
	if (!hfs(req)->dont_mask)
		return;
	if (!own_fs) {
		if (unshare(CLONE_FS) != 0)
			return;
		own_fs = true;
	}
	umask(fuse_req_ctx(req)->umask);
}

static void umask_exit(fuse_req_t req)
{
	if (hfs(req)->dont_mask && own_fs)
		umask(0);
}

static void cred_enter(fuse_req_t req, struct cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[MAX_GROUPS];
	int n;

	c->changed = false;
	if (!hfs(req)->as_root || (ctx->uid == 0 && ctx->gid == 0))
		return;
	n = fuse_req_getgroups(req, MAX_GROUPS, groups);
	if (n < 0)
		n = 0;
	if (n > MAX_GROUPS)
		n = MAX_GROUPS;
	syscall(SYS_setgroups, (size_t)n, groups);
	syscall(SYS_setfsgid, ctx->gid);
	syscall(SYS_setfsuid, ctx->uid);
	c->changed = true;
}

static void cred_exit(struct cred *c)
{
	if (!c->changed)
		return;
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	syscall(SYS_setgroups, (size_t)0, NULL);
}

/* ------------------------------------------------------------------ */
/* Lookup */

static int stat_fd(int fd, struct stat *st)
{
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	return 0;
}

/*
 * The kernel's timeouts: the long one for what the source watch covers
 * (hotfs/watch.h), unless the user set the timeouts.
 */
static bool watched(struct hotfs *fs, fuse_ino_t dir)
{
	return fs->watch && !vd_is(dir) &&
	       hino_fs(fs, dir)->wd > 0;
}

static double entry_timeout(struct hotfs *fs, bool dir_watched)
{
	if (dir_watched && !fs->o->entry_timeout_str)
		return HOTFS_WATCH_TIMEOUT;
	return fs->o->entry_timeout;
}

static double attr_timeout(struct hotfs *fs, struct hotfs_inode *in)
{
	if (fs->watch && in->covered && !fs->o->attr_timeout_str)
		return HOTFS_WATCH_TIMEOUT;
	return fs->o->attr_timeout;
}

/*
 * Look name up in parent and fill e.  Returns 0 or -errno.  A missing
 * name is -ENOENT; the caller decides whether to cache it negatively.
 */
static int do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in;
	bool pw;
	int fd, pfd, err = 0;

	if (meta_fs_lookup(fs, hino(req, parent), name, e, &err))
		return err;
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
	in = ino_get(fs->it, fd, &e->attr, &err);
	if (!in)
		return err;
	if (S_ISDIR(e->attr.st_mode)) {
		in->covered = watch_dir(fs->watch, in);
		meta_fs_attach(fs, in);
	}
	else
		in->covered = pw && e->attr.st_nlink == 1;
	e->attr_timeout = attr_timeout(fs, in);
	e->ino = (uintptr_t)in;
	return 0;
}

/*
 * Negative entries kept by the daemon: names a lookup found absent, per
 * directory, with the directory's stamp from before that lookup.  A later
 * lookup of such a name in the unchanged directory is answered from
 * memory: git probes .gitattributes in every directory, and once the
 * kernel's caches were dropped each probe would read the directory's
 * blocks from the slow disk.  A change to the directory (through the
 * mount or not) changes its stamp.  Not kept when the directory changed
 * within RACY_NS of the lookup (2.1 s on filesystems with whole-second
 * stamps): a change in the same clock tick could leave the stamp as it
 * was.  Listings follow the same rule.  Neither is kept on a remote
 * source (hotfs/srcprobe.h): there a directory's stamp is the lower
 * client's cached copy (sshfs keeps it 20 s), and another client's
 * create does not change it in time.
 */
#define RACY_NS		50000000LL	/* 50 ms: a few clock ticks */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_ns(&ts);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts_ns(&ts);
}

/*
 * The source's measured clock tick (hotfs/srcprobe.h) and slack; and
 * whole-second times, whatever was measured: a filesystem (or server)
 * with 1 or 2 s stamps.
 */
static int64_t racy_window(int64_t mtime_ns, int64_t ctime_ns)
{
	int64_t w = hotfs_src.gran_ns + PROBE_RACY_SLACK_NS;

	if (mtime_ns % 1000000000LL == 0 && ctime_ns % 1000000000LL == 0 &&
	    w < 2100000000LL)
		w = 2100000000LL;
	return w > RACY_NS ? w : RACY_NS;
}

static bool stamp_racy_ns(int64_t mtime_ns, int64_t ctime_ns, int64_t now)
{
	int64_t w = racy_window(mtime_ns, ctime_ns);

	return now - mtime_ns < w || now - ctime_ns < w;
}

static bool stamp_racy(const struct stat *st, int64_t now)
{
	return stamp_racy_ns(ts_ns(&st->st_mtim), ts_ns(&st->st_ctim), now);
}

static bool neg_hit(struct hotfs_inode *dir, const struct stat *st,
		    const char *name)
{
	struct hotfs_neg *n;
	bool hit = false;
	unsigned i;

	pthread_mutex_lock(&dir->m);
	n = dir->neg;
	if (n && n->mtime_ns == ts_ns(&st->st_mtim) &&
	    n->ctime_ns == ts_ns(&st->st_ctim))
		for (i = 0; i < n->n && !hit; i++)
			hit = strcmp(n->names[i], name) == 0;
	pthread_mutex_unlock(&dir->m);
	return hit;
}

static void neg_add(struct hotfs_inode *dir, const struct stat *st,
		    const char *name)
{
	struct hotfs_neg *n, *stale = NULL;
	char *copy = strdup(name);

	if (!copy)
		return;
	pthread_mutex_lock(&dir->m);
	n = dir->neg;
	if (n && (n->mtime_ns != ts_ns(&st->st_mtim) ||
		  n->ctime_ns != ts_ns(&st->st_ctim))) {
		stale = n;		/* the directory changed: start over */
		n = dir->neg = NULL;
	}
	if (!n)
		n = dir->neg = calloc(1, sizeof(*n));
	if (n) {
		n->mtime_ns = ts_ns(&st->st_mtim);
		n->ctime_ns = ts_ns(&st->st_ctim);
		if (n->n < HOTFS_NEG_MAX) {
			n->names[n->n++] = copy;
		} else {		/* replace round-robin */
			free(n->names[n->next]);
			n->names[n->next] = copy;
			n->next = (n->next + 1) % HOTFS_NEG_MAX;
		}
		copy = NULL;
	}
	pthread_mutex_unlock(&dir->m);
	free(copy);
	neg_free(stale);
}

static void hotfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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
	count(&hfs(req)->n_lookup);
	if (meta_fs_lookup(hfs(req), dir, name, &e, &err))
		goto reply;
	dfd = ino_fd(hfs(req)->it, dir);
	if (dfd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	/* the directory's stamp before the lookup (no disk: its inode is
	 * held open) */
	stamped = !hotfs_src.remote && fstat(dfd, &dst) == 0;
	ino_fd_put(dir);
	if (stamped && neg_hit(dir, &dst, name)) {
		err = -ENOENT;
	} else {
		if (stamped)
			now = now_ns();
		err = do_lookup(req, parent, name, &e);
		if (err == -ENOENT && stamped && !stamp_racy(&dst, now))
			neg_add(dir, &dst, name);
	}
reply:
	if (err == -ENOENT) {
		/* a negative entry: git probes many absent names */
		e.ino = 0;
		e.entry_timeout = entry_timeout(hfs(req),
						watched(hfs(req), parent));
		/* a remote source: another client's create must be seen at
		 * the next lookup, as on the lower mount itself */
		if (hotfs_src.remote && !hfs(req)->o->entry_timeout_str)
			e.entry_timeout = 0;
		fuse_reply_entry(req, &e);
		return;
	}
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void forget_one(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	if (ino == FUSE_ROOT_ID || vd_is(ino))
		return;
	ino_forget(hfs(req)->it, hino(req, ino), n);
}

static void hotfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(req, ino, nlookup);
	fuse_reply_none(req);
}

static void hotfs_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget_one(req, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ------------------------------------------------------------------ */
/* Attributes */

static void hotfs_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in;
	struct stat st;
	bool fresh = true, changed, held = false;
	int err, fd = -1;

	if (vd_is(ino)) {
		vd_getattr(req, ino);
		return;
	}
	in = hino(req, ino);
	count(&fs->n_getattr);
	if (fi && fi->fh && fhfd(fi) >= 0) {
		fd = fhfd(fi);
		err = fstat(fd, &st) == -1 ? -errno : 0;
	} else if (meta_fs_getattr(fs, in, &st)) {
		err = 0;
		fresh = false;
	} else {
		fd = ifd(req, ino);
		held = fd >= 0;
		err = fd < 0 ? -errno : stat_fd(fd, &st);
	}
	if (err) {
		if (held)
			iput(req, ino);
		fuse_reply_err(req, -err);
		return;
	}
	if (!S_ISDIR(st.st_mode) && st.st_nlink != 1)
		in->covered = false;  /* a link elsewhere */
	/* a file changed behind the mount: its cached pages go too (the
	 * kernel's own check on a new mtime is off: hotfs/stamp.h) */
	changed = fresh && S_ISREG(st.st_mode) &&
		  fs->o->revalidate != HOTFS_REVAL_NEVER &&
		  stamp_check_fd(in, fd) == STAMP_CHANGED;
	/* the reply may be the kernel's last use of the inode (a forget
	 * can free it right after): held until the change is sent */
	if (changed)
		ino_hold(fs->it, in);
	if (held)	/* after its last use above */
		iput(req, ino);
	fuse_reply_attr(req, &st, attr_timeout(fs, in));
	if (changed) {
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
		stamp_inval_sent(in);
		ino_unhold(fs->it, in);
	}
}

static void hotfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			  int valid, struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in = hino(req, ino);
	char pn[32];
	int r = 0, fd;

	if (vd_is(ino)) {
		/* without open, ctl's O_TRUNC comes as a setattr: nothing to
		 * cut (its answers are not truncated by an open either) */
		if (fs->no_open && ino == VINO_CTL &&
		    !(valid & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME |
				FUSE_SET_ATTR_MTIME_NOW |
				FUSE_SET_ATTR_CTIME)) &&
		    (!(valid & FUSE_SET_ATTR_SIZE) || attr->st_size == 0))
			vd_getattr(req, ino);
		else
			fuse_reply_err(req, EPERM);
		return;
	}
	if (fi && !fi->fh)	/* no open: by the inode */
		fi = NULL;
	fd = ino_fd(fs->it, in);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	meta_fs_change(fs, NULL, in);
	procname(pn, sizeof(pn), fd);
	/* the new ctime or mtime is the mount's own (hotfs/stamp.h) */
	stamp_begin(in, fd);
	if (valid & FUSE_SET_ATTR_MODE) {
		if (fi)
			r = fchmod(fh_src(fs, in, fi), attr->st_mode);
		else
			r = fchmodat(fs->proc_self_fd, pn, attr->st_mode, 0);
		if (r == -1)
			goto out_err;
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid :
			    (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid :
			    (gid_t)-1;

		r = fchownat(fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		if (r == -1)
			goto out_err;
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		struct cache_wr w;

		cache_write_begin(fs->cache, fs->it, in, &w, 0, 0);
		if (fi)
			r = ftruncate(fh_src(fs, in, fi), attr->st_size);
		else {
			char path[64];

			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			r = truncate(path, attr->st_size);
		}
		cache_write_end(fs->cache, in, &w, 0, 0, NULL);
		if (r == -1)
			goto out_err;
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec tv[2];

		tv[0].tv_sec = 0;
		tv[1].tv_sec = 0;
		tv[0].tv_nsec = UTIME_OMIT;
		tv[1].tv_nsec = UTIME_OMIT;
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		if (fi)
			r = futimens(fh_src(fs, in, fi), tv);
		else if (S_ISLNK(in->type))
			r = utimensat(fd, "", tv,
				      AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		else
			r = utimensat(fs->proc_self_fd, pn, tv, 0);
		if (r == -1)
			goto out_err;
	}
	stamp_end(in, fd);
	ino_fd_put(in);
	hotfs_getattr(req, ino, fi);
	return;
out_err:
	r = errno;
	stamp_end(in, fd);
	ino_fd_put(in);
	fuse_reply_err(req, r);
}

static void hotfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	const char *t;
	ssize_t n;
	int fd;

	if (vd_is(ino)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	t = meta_fs_readlink(hfs(req), hino(req, ino));
	if (t) {
		fuse_reply_readlink(req, t);
		return;
	}
	fd = ifd(req, ino);
	n = fd < 0 ? -1 : readlinkat(fd, "", buf, sizeof(buf));
	if (fd >= 0) {
		int e = errno;

		iput(req, ino);
		errno = e;
	}
	if (n == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	if (n == sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

/* ------------------------------------------------------------------ */
/* Creating and removing names */

/* After a successful create of name in parent, reply with its entry. */
static void reply_new_entry(fuse_req_t req, fuse_ino_t parent,
			    const char *name)
{
	struct fuse_entry_param e;
	int err;

	err = do_lookup(req, parent, name, &e);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, const char *link)
{
	struct cred c;
	int pfd, r;

	if (vd_is(parent) || vd_is_name(hfs(req), parent, name)) {
		fuse_reply_err(req, vd_is(parent) ? EACCES : EEXIST);
		return;
	}
	pfd = ifd(req, parent);
	if (pfd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	meta_fs_change(hfs(req), hino(req, parent), NULL);
	cred_enter(req, &c);
	umask_enter(req);
	if (S_ISDIR(mode))
		r = mkdirat(pfd, name, mode);
	else if (S_ISLNK(mode))
		r = symlinkat(link, pfd, name);
	else
		r = mknodat(pfd, name, mode, rdev);
	if (r == -1)
		r = -errno;
	umask_exit(req);
	cred_exit(&c);
	iput(req, parent);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_new_entry(req, parent, name);
}

static void hotfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, mode, rdev, NULL);
}

static void hotfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | mode, 0, NULL);
}

static void hotfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			  const char *name)
{
	make_node(req, parent, name, S_IFLNK, 0, link);
}

static void hotfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		       const char *name)
{
	struct hotfs *fs = hfs(req);
	char pn[32];
	int r, fd, pfd;

	if (vd_is(ino) || vd_is(parent) ||
	    vd_is_name(hfs(req), parent, name)) {
		fuse_reply_err(req, vd_is(ino) ? EPERM : vd_is(parent) ?
			       EACCES : EEXIST);
		return;
	}

	fd = ifd(req, ino);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	pfd = ifd(req, parent);
	if (pfd < 0) {
		r = errno;
		iput(req, ino);
		fuse_reply_err(req, r);
		return;
	}
	meta_fs_change(fs, hino(req, parent), hino(req, ino));
	procname(pn, sizeof(pn), fd);
	r = linkat(fd, "", pfd, name, AT_EMPTY_PATH);
	if (r == -1 && (errno == ENOENT || errno == EINVAL))
		r = linkat(fs->proc_self_fd, pn, pfd, name,
			   AT_SYMLINK_FOLLOW);
	r = r == -1 ? errno : 0;
	iput(req, ino);
	iput(req, parent);
	if (r) {
		fuse_reply_err(req, r);
		return;
	}
	reply_new_entry(req, parent, name);
}

/*
 * The inode of dirfd/name, if the table has one, with its fd open and in
 * use (unpin_name after): before an operation that may take that name
 * away.  An inode made from the metadata snapshot is opened by the name
 * it still has; one whose fd the budget closed is reopened by handle,
 * since a handle finds no deleted file again (ESTALE) while the kernel
 * may still use the inode (unlinked but open); once the file has no link
 * the budget leaves its fd alone.  NULL if none, or failing (stale
 * anyway).
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
	struct hotfs_inode *in;
	struct stat st;
	bool have;
	int r, pfd;

	if (vd_is(parent) || vd_is_name(fs, parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pfd = ifd(req, parent);
	if (pfd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	meta_fs_change(fs, hino(req, parent), NULL);
	in = pin_name(fs, pfd, name, &st);
	have = in || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	r = unlinkat(pfd, name, flags);
	r = r == -1 ? errno : 0;
	unpin_name(fs, in);
	iput(req, parent);
	if (r == 0 && have)
		ino_unretain(fs->it, st.st_dev, st.st_ino);
	fuse_reply_err(req, r);
}

static void hotfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void hotfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, AT_REMOVEDIR);
}

static void hotfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			 fuse_ino_t newparent, const char *newname,
			 unsigned int flags)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *from, *to;
	struct stat st, fst;
	bool have;
	int pfd, npfd;
	long r;

	if (vd_is(parent) || vd_is(newparent) ||
	    vd_is_name(hfs(req), parent, name) ||
	    vd_is_name(hfs(req), newparent, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}

	pfd = ifd(req, parent);
	if (pfd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	npfd = ifd(req, newparent);
	if (npfd < 0) {
		r = errno;
		iput(req, parent);
		fuse_reply_err(req, r);
		return;
	}
	meta_fs_change(fs, hino(req, parent), NULL);
	meta_fs_change(fs, hino(req, newparent), NULL);
	/* an object made from the snapshot is opened by the name it had:
	 * open it before that name is gone (both, for an exchange); a
	 * target replaced by the rename loses its name (see pin_name) */
	from = fs->meta ? pin_name(fs, pfd, name, &fst) : NULL;
	to = pin_name(fs, npfd, newname, &st);
	have = !(flags & RENAME_EXCHANGE) &&
	       (to || fstatat(npfd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0);
	r = syscall(SYS_renameat2, pfd, name, npfd, newname, flags);
	r = r == -1 ? errno : 0;
	unpin_name(fs, from);
	unpin_name(fs, to);
	iput(req, parent);
	iput(req, newparent);
	if (r == 0 && have)
		ino_unretain(fs->it, st.st_dev, st.st_ino);
	fuse_reply_err(req, r);
}

/* ------------------------------------------------------------------ */
/* Files */

/* Flags for our own fd on the source: the kernel has handled these. */
static int backing_flags(int flags)
{
	flags &= ~(O_NOFOLLOW | O_DIRECT);
	return flags | O_CLOEXEC;
}

/*
 * Keep the kernel's page cache if the file is as we last saw it.  Returns
 * true if it changed behind the mount since: close-to-open then wants the
 * kernel's cached attributes dropped too.
 */
static bool set_keep_cache(struct hotfs_inode *in, int fd,
			   struct fuse_file_info *fi, bool never)
{
	enum stamp_verdict v = STAMP_NEW;	/* unknown: drop them */
	struct stat st;
	bool pending;

	pthread_mutex_lock(&in->m);
	/* under m: a write of the mount's own that ends meanwhile has
	 * recorded its stamp (hotfs/stamp.h); from the server on a
	 * remote source (close-to-open: another client's close is seen) */
	if (srcprobe_stat_sync(fd, &st) == 0) {
		v = stamp_check_locked(in, &st);
		in->stamp_checked_ns = mono_ns();
	}
	/* a getattr or the source watch saw the change first and its
	 * invalidation is on its way: this open must not keep what it
	 * will drop, nor return before the kernel's copy is gone */
	pending = stamp_inval_pending(in);
	if (pending)
		stamp_wait_inval_locked(in);
	fi->keep_cache = never || (v == STAMP_SAME && !pending &&
				   in->stamp_settled);
	/* the same stamp, recorded within its clock tick: the kernel's
	 * pages may hold a version written earlier in that tick; dropped
	 * now, the ones read from here on are of the version the stamp
	 * names once the tick is over */
	if (!fi->keep_cache && v == STAMP_SAME && in->stamp_valid)
		in->stamp_settled = !srcprobe_racy_now(in->stamp_mtime_ns,
						       in->stamp_ctime_ns);
	in->nopen++;
	pthread_mutex_unlock(&in->m);
	return (v == STAMP_CHANGED || pending) && !never;
}

/*
 * revalidate=N: a read-only open of a file whose stamp an open took from
 * the source less than N seconds ago, unchanged since by the mount and
 * settled (hotfs/srcprobe.h), is answered without the source: the
 * kernel keeps its pages, and the handle opens the source file only if
 * a request needs it (fh_src).  A fully cached file read from the
 * kernel's pages then costs the source nothing.  True if so (fi->fh
 * set, the open counted).
 */
static bool open_trusted(struct hotfs *fs, struct hotfs_inode *in,
			 struct fuse_file_info *fi)
{
	struct hotfs_fh *fh;
	int64_t limit;
	bool ok;

	if (fs->o->revalidate != HOTFS_REVAL_SECONDS ||
	    (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return false;
	fh = fh_new(-1);
	if (!fh)
		return false;
	fh->lazy = true;
	fh->lazy_flags = backing_flags(fi->flags);
	limit = (int64_t)(fs->o->revalidate_secs * 1e9);
	pthread_mutex_lock(&in->m);
	ok = in->stamp_valid && in->stamp_settled && in->stamp_checked_ns &&
	     mono_ns() - in->stamp_checked_ns < limit &&
	     !in->chg_inflight && !in->wr_inflight &&
	     !stamp_inval_pending(in);
	if (ok)
		in->nopen++;
	pthread_mutex_unlock(&in->m);
	if (!ok) {
		fh_free(fh);
		return false;
	}
	fi->fh = (uintptr_t)fh;
	fi->keep_cache = 1;
	fi->noflush = 1;
	return true;
}

static void hotfs_open(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in = hino(req, ino);
	struct hotfs_fh *fh;
	struct cache_wr w;
	char pn[32];
	int fd, err;

	if (vd_is(ino)) {
		vd_open(req, ino, fi);
		return;
	}
	count(&fs->n_open);
	if (fs->no_open) {	/* see "Files without open round trips" */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (open_trusted(fs, in, fi)) {
		if (fuse_reply_open(req, fi) == -ENOENT) {
			pthread_mutex_lock(&in->m);
			in->nopen--;
			pthread_mutex_unlock(&in->m);
			fh_free(hfh(fi));
		}
		return;
	}
	fd = ino_fd(fs->it, in);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	procname(pn, sizeof(pn), fd);
	if (fi->flags & O_TRUNC)
		cache_write_begin(fs->cache, fs->it, in, &w, 0, 0);
	fd = openat(fs->proc_self_fd, pn, backing_flags(fi->flags));
	err = fd == -1 ? errno : 0;
	if (fi->flags & O_TRUNC)
		cache_write_end(fs->cache, in, &w, 0, 0, NULL);
	ino_fd_put(in);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	count(&fs->n_src_open);
	fh = fh_new(fd);
	if (!fh) {
		close(fd);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fh->append = (fi->flags & O_APPEND) != 0;
	fi->fh = (uintptr_t)fh;
	/* a read-only handle has no write error to report at close: no
	 * flush round trip (locks are the kernel's own, see above) */
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
	if (set_keep_cache(in, fd, fi, fs->o->revalidate == HOTFS_REVAL_NEVER))
		/* attributes only (offset < 0): the size is seen at once */
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* the open was interrupted: the kernel will not release */
		pthread_mutex_lock(&in->m);
		in->nopen--;
		pthread_mutex_unlock(&in->m);
		fh_free(fh);
	}
}

static void hotfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			 mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct hotfs_inode *in;
	struct hotfs_fh *fh;
	struct cred c;
	int fd, err, pfd;

	if (vd_is(parent) || vd_is_name(hfs(req), parent, name)) {
		fuse_reply_err(req, vd_is(parent) ? EACCES : EEXIST);
		return;
	}
	pfd = ifd(req, parent);
	if (pfd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	meta_fs_change(hfs(req), hino(req, parent), NULL);
	cred_enter(req, &c);
	umask_enter(req);
	fd = openat(pfd, name, backing_flags(fi->flags) | O_CREAT, mode);
	err = fd == -1 ? -errno : 0;
	umask_exit(req);
	cred_exit(&c);
	iput(req, parent);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	err = do_lookup(req, parent, name, &e);
	/* without open the kernel sends no release: no handle to leak */
	fh = err || hfs(req)->no_open ? NULL : fh_new(fd);
	if (!fh && (err || !hfs(req)->no_open)) {
		close(fd);
		fuse_reply_err(req, err ? -err : ENOMEM);
		return;
	}
	in = hino(req, e.ino);
	if (fh)
		fh->append = (fi->flags & O_APPEND) != 0;
	else {
		close(fd);
		fi->noflush = 1;
	}
	if (fi->flags & O_TRUNC) {
		/* an existing file opened with O_CREAT|O_TRUNC */
		struct cache_wr w;

		/* no old stamp: drop them all */
		cache_write_begin(NULL, hfs(req)->it, in, &w, 0, 0);
		w.have_old = false;
		cache_write_end(hfs(req)->cache, in, &w, 0, 0, NULL);
	}
	fi->fh = (uintptr_t)fh;
	pthread_mutex_lock(&in->m);
	in->nopen++;
	pthread_mutex_unlock(&in->m);
	if (fuse_reply_create(req, &e, fi) == -ENOENT && fh) {
		pthread_mutex_lock(&in->m);
		in->nopen--;
		pthread_mutex_unlock(&in->m);
		fh_free(fh);
	}
}

static void hotfs_release(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct hotfs_inode *in = hino(req, ino);

	if (vd_is(ino)) {
		vd_release(req, ino, fi);
		return;
	}
	if (!fi->fh) {		/* made by create without open */
		fuse_reply_err(req, 0);
		return;
	}
	pthread_mutex_lock(&in->m);
	if (in->nopen)
		in->nopen--;
	pthread_mutex_unlock(&in->m);
	cache_release(hfs(req)->cache, in, hfh(fi));
	fh_free(hfh(fi));
	fuse_reply_err(req, 0);
}

static void hotfs_flush(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	int r;

	if (!fi->fh) {		/* no open: no flush round trips either */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (vd_is(ino)) {
		fuse_reply_err(req, 0);
		return;
	}

	(void)ino;
	/* a lazy handle never opened: nothing written, nothing to report */
	if (fhfd(fi) < 0) {
		fuse_reply_err(req, 0);
		return;
	}
	/* like close(2) on the source: NFS reports write errors here */
	r = close(dup(fhfd(fi)));
	fuse_reply_err(req, r == -1 ? errno : 0);
}

static void hotfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	bool tmp;
	int fd, r;

	if (vd_is(ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	fd = src_fd(hfs(req), hino(req, ino), fi, O_RDONLY, &tmp);
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	r = datasync ? fdatasync(fd) : fsync(fd);
	r = r == -1 ? -errno : 0;
	src_done(fd, tmp);
	fuse_reply_err(req, -r);
}

static void hotfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct hotfs *fs = hfs(req);

	struct hotfs_inode *in;
	struct hotfs_fh *fh;
	bool tmp;
	int fd;

	if (vd_is(ino)) {
		vd_read(req, ino, size, off, fi);
		return;
	}
	in = hino(req, ino);
	if (fi->fh) {
		fd = fh_src(fs, in, fi);
		if (fd < 0)
			fuse_reply_err(req, errno);
		else if (fs->cache)
			cache_read(req, fs->cache, in, hfh(fi), fd, size, off);
		else
			cache_reply_source(req, fd, size, off);
		return;
	}
	/* no open: this read's own fd (the reader's O_NOATIME too), the
	 * inode's shared handle */
	fd = src_fd(fs, in, fi, O_RDONLY | (fi->flags & O_NOATIME), &tmp);
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	fh = NULL;
	if (fs->cache) {
		pthread_mutex_lock(&in->m);
		if (!in->nofh)
			in->nofh = fh_new_shared();
		fh = in->nofh;
		pthread_mutex_unlock(&in->m);
	}
	if (!fh) {
		cache_reply_source(req, fd, size, off);
	} else {
		/* the reply may be the kernel's last use of the inode: hold
		 * it until the handle has given up what it assembled (a
		 * partial extent: promoted from the source if it is hot) */
		ino_hold(fs->it, in);
		cache_read(req, fs->cache, in, fh, fd, size, off);
		cache_release(fs->cache, in, fh);
		ino_unhold(fs->it, in);
	}
	src_done(fd, tmp);
}

static void write_virtual(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_bufvec *in_buf, off_t off,
			  struct fuse_file_info *fi)
{
	size_t len = fuse_buf_size(in_buf);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(len);
	char *b = malloc(len + 1);
	ssize_t n;

	if (!b) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	mem.buf[0].mem = b;
	n = fuse_buf_copy(&mem, in_buf, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		vd_write(req, ino, b, (size_t)n, off, fi);
	free(b);
}

static void hotfs_write_buf(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_bufvec *in_buf, off_t off,
			    struct fuse_file_info *fi)
{
	struct hotfs_inode *in = hino(req, ino);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in_buf));
	struct hotfs *fs = hfs(req);
	const void *data = NULL;
	struct cache_wr w;
	bool tmp, append;
	ssize_t n;
	int fd, r;

	if (vd_is(ino)) {
		write_virtual(req, ino, in_buf, off, fi);
		return;
	}
	fd = src_fd(fs, in, fi, write_flags(fi), &tmp);
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	append = tmp ? (fi->flags & O_APPEND) != 0 : hfh(fi)->append;
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	/* the written bytes, for writethrough, when they are in memory */
	if (in_buf->count == 1 && !(in_buf->buf[0].flags & FUSE_BUF_IS_FD))
		data = (const char *)in_buf->buf[0].mem + in_buf->off;
	cache_write_begin(fs->cache, fs->it, in, &w,
			  append ? 0 : (uint64_t)off,
			  append ? CACHE_WR_TO_END : fuse_buf_size(in_buf));
	n = fuse_buf_copy(&out, in_buf, 0);
	/* O_APPEND: the kernel's offset may not be where it landed */
	if (append && n > 0)
		cache_write_end(fs->cache, in, &w, 0, CACHE_WR_TO_END, NULL);
	else
		cache_write_end(fs->cache, in, &w, (uint64_t)off,
				n > 0 ? (uint64_t)n : fuse_buf_size(in_buf),
				n > 0 ? data : NULL);
	/* a write's own fd: its close reports what flush would have */
	r = src_done(fd, tmp);
	if (n >= 0 && r < 0)
		n = r;
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void hotfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			    off_t off, off_t len, struct fuse_file_info *fi)
{
	bool tmp;
	int fd, c;
	struct hotfs_inode *in = hino(req, ino);
	struct cache_wr w;
	uint64_t wlen;
	int r;

	if (vd_is(ino)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* collapse and insert move everything after off */
	wlen = mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) ?
	       CACHE_WR_TO_END : (uint64_t)len;
	fd = src_fd(hfs(req), in, fi, O_WRONLY, &tmp);
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	cache_write_begin(hfs(req)->cache, hfs(req)->it, in, &w,
			  (uint64_t)off, wlen);
	r = fallocate(fd, mode, off, len);
	r = r == -1 ? -errno : 0;
	cache_write_end(hfs(req)->cache, in, &w, (uint64_t)off, wlen, NULL);
	c = src_done(fd, tmp);
	fuse_reply_err(req, r ? -r : -c);
}

static void hotfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
				  off_t off_in, struct fuse_file_info *fi_in,
				  fuse_ino_t ino_out, off_t off_out,
				  struct fuse_file_info *fi_out, size_t len,
				  int flags)
{
	bool tmp_in, tmp_out;
	int fd_in, fd_out, e, c;
	struct hotfs_inode *out;
	uint64_t at = (uint64_t)off_out;
	struct cache_wr w;
	ssize_t n;

	if (vd_is(ino_in) || vd_is(ino_out)) {
		fuse_reply_err(req, EXDEV);
		return;
	}
	out = hino(req, ino_out);
	fd_in = src_fd(hfs(req), hino(req, ino_in), fi_in, O_RDONLY, &tmp_in);
	if (fd_in == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	fd_out = src_fd(hfs(req), out, fi_out, write_flags(fi_out), &tmp_out);
	if (fd_out == -1) {
		e = errno;
		src_done(fd_in, tmp_in);
		fuse_reply_err(req, e);
		return;
	}
	cache_write_begin(hfs(req)->cache, hfs(req)->it, out, &w, at, len);
	n = copy_file_range(fd_in, &off_in, fd_out, &off_out, len,
			    (unsigned)flags);
	e = n == -1 ? errno : 0;
	cache_write_end(hfs(req)->cache, out, &w, at, len, NULL);
	src_done(fd_in, tmp_in);
	c = src_done(fd_out, tmp_out);
	if (!e && c)
		e = -c;
	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_write(req, (size_t)n);
}

static void hotfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
			struct fuse_file_info *fi)
{
	bool tmp;
	int fd, e;
	off_t r;

	if (vd_is(ino)) {
		fuse_reply_err(req, EINVAL);
		return;
	}

	fd = src_fd(hfs(req), hino(req, ino), fi, O_RDONLY, &tmp);
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	r = lseek(fd, off, whence);
	e = r == -1 ? errno : 0;
	src_done(fd, tmp);
	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_lseek(req, r);
}

/* ------------------------------------------------------------------ */
/* Directories */

/*
 * An open directory.  It is read either from the source (dp; offsets are
 * the source's d_off) or, when the directory's last listing is still
 * current, from that listing (lst; offsets are entry indices + 1), never
 * both.  Read from the source from start to end without a seek, it
 * records a new listing.
 */
struct hotfs_dirp {
	DIR *dp;
	struct hotfs_inode *in;
	struct dirent *entry;		/* read from dp, not yet returned */
	off_t offset;
	struct hotfs_listing *lst;	/* serving from this, or NULL */
	uint64_t gen_tag;		/* handle-less: lst->gen << 32 */
	/* the directory's stamp at opendir */
	int64_t mtime_ns, ctime_ns;
	off_t size;
	/* recording (dp mode) */
	bool rec;
	struct hotfs_lent *rents;	/* names as offsets into rnames */
	size_t rn, rcap;
	char *rnames;
	size_t rnlen, rncap;
};

/*
 * Let the kernel keep a directory's listing while the directory is
 * unchanged: its stamp (mtime, ctime) when this open began is compared
 * with the one when the last open began, before any entry was read, so a
 * change during a listing is never hidden from the next one.  Changes
 * through the mount invalidate the kernel's copy by themselves.
 */
static void dir_keep_cache(struct hotfs_inode *in, int fd,
			   struct fuse_file_info *fi, bool never)
{
	struct stat st;

	fi->cache_readdir = 0;
	fi->keep_cache = 0;
	/* a remote source: the directory's stamp comes from the lower
	 * client's cache and says nothing of another client's create */
	if ((hotfs_src.remote && !never) || fstat(fd, &st) == -1)
		return;
	pthread_mutex_lock(&in->m);
	fi->cache_readdir = 1;
	fi->keep_cache = never || (in->stamp_valid &&
			 in->stamp_mtime_ns == ts_ns(&st.st_mtim) &&
			 in->stamp_ctime_ns == ts_ns(&st.st_ctim) &&
			 in->stamp_size == st.st_size);
	in->stamp_valid = true;
	in->stamp_mtime_ns = ts_ns(&st.st_mtim);
	in->stamp_ctime_ns = ts_ns(&st.st_ctim);
	in->stamp_size = st.st_size;
	pthread_mutex_unlock(&in->m);
}

/* Is l the directory's current listing, by its stamp st? */
static bool listing_fresh(const struct hotfs_listing *l, const struct stat *st)
{
	return !l->racy && l->mtime_ns == ts_ns(&st->st_mtim) &&
	       l->ctime_ns == ts_ns(&st->st_ctim) && l->size == st->st_size;
}

/* Serve from the last listing if the directory has not changed since. */
static void listing_open(struct hotfs *fs, struct hotfs_dirp *d, int fd)
{
	struct hotfs_listing *l;
	struct stat st;

	if (!fs->listings || fstat(fd, &st) == -1)
		return;
	d->mtime_ns = ts_ns(&st.st_mtim);
	d->ctime_ns = ts_ns(&st.st_ctim);
	d->size = st.st_size;
	pthread_mutex_lock(&d->in->m);
	l = d->in->listing;
	if (l && listing_fresh(l, &st)) {
		atomic_fetch_add(&l->refs, 1);
		d->lst = l;
	}
	pthread_mutex_unlock(&d->in->m);
	d->rec = !d->lst;
}

static void rec_stop(struct hotfs_dirp *d)
{
	d->rec = false;
	free(d->rents);
	free(d->rnames);
	d->rents = NULL;
	d->rnames = NULL;
	d->rn = d->rcap = d->rnlen = d->rncap = 0;
}

static void rec_add(struct hotfs_dirp *d, const struct dirent *de)
{
	size_t len = strlen(de->d_name) + 1;

	if (d->rn == d->rcap) {
		size_t cap = d->rcap ? d->rcap * 2 : 64;
		struct hotfs_lent *e = realloc(d->rents, cap * sizeof(*e));

		if (!e) {
			rec_stop(d);
			return;
		}
		d->rents = e;
		d->rcap = cap;
	}
	if (d->rnlen + len > d->rncap) {
		size_t cap = d->rncap ? d->rncap * 2 : 1024;
		char *n;

		while (cap < d->rnlen + len)
			cap *= 2;
		n = realloc(d->rnames, cap);
		if (!n) {
			rec_stop(d);
			return;
		}
		d->rnames = n;
		d->rncap = cap;
	}
	memcpy(d->rnames + d->rnlen, de->d_name, len);
	d->rents[d->rn].ino = de->d_ino;
	d->rents[d->rn].type = de->d_type;
	d->rents[d->rn].name = (const char *)(uintptr_t)d->rnlen;
	d->rn++;
	d->rnlen += len;
}

/* The whole directory was read: make the listing (NULL: no memory). */
static struct hotfs_listing *rec_make(struct hotfs_dirp *d)
{
	struct hotfs_listing *l;
	size_t i;

	l = calloc(1, sizeof(*l));
	if (!l) {
		rec_stop(d);
		return NULL;
	}
	l->mtime_ns = d->mtime_ns;
	l->ctime_ns = d->ctime_ns;
	l->size = d->size;
	l->gen = listing_next_gen();
	l->racy = stamp_racy_ns(d->mtime_ns, d->ctime_ns, now_ns());
	l->n = d->rn;
	l->ents = d->rents;
	l->names = d->rnames;
	for (i = 0; i < l->n; i++)
		l->ents[i].name = l->names + (uintptr_t)l->ents[i].name;
	l->bytes = sizeof(*l) + d->rcap * sizeof(*l->ents) + d->rncap;
	d->rents = NULL;
	d->rnames = NULL;
	d->rec = false;
	return l;
}

/* The whole directory was read from the source: keep it. */
static void rec_done(struct hotfs_dirp *d)
{
	struct hotfs_listing *l = rec_make(d);

	if (l)
		listing_install(d->in, l);
}

/* ------------------------------------------------------------------ */
/*
 * Directories without opendir (FUSE_CAP_NO_OPENDIR_SUPPORT).  Once
 * hotfs answers an opendir with ENOSYS the kernel opens directories by
 * itself, keeps their entries in its page cache (FOPEN_CACHE_DIR:
 * dropped when the directory's mtime changes, when the source watch
 * reports a change, or by a change through the mount) and sends readdir
 * without a handle: no opendir/releasedir round trips per directory.
 * Such a readdir is answered from the directory's listing, checked
 * against the directory's stamp when a pass starts (offset 0); offsets
 * are positions in it.  Listings over the memory bound are kept in a
 * small ring, for the passes under way.
 */
#define NTRANSIENT 16

struct transient {
	dev_t dev;
	ino_t ino;
	struct hotfs_listing *l;
};

static pthread_mutex_t transient_lock = PTHREAD_MUTEX_INITIALIZER;
static struct transient transient[NTRANSIENT];
static unsigned transient_next;


/* A referenced transient listing of in: fresh for st, or of generation
 * gen if st is NULL. */
static struct hotfs_listing *transient_get(struct hotfs_inode *in,
					   const struct stat *st, uint32_t gen)
{
	struct hotfs_listing *l = NULL;
	unsigned i;

	pthread_mutex_lock(&transient_lock);
	for (i = 0; i < NTRANSIENT; i++) {
		struct transient *t = &transient[i];

		if (t->l && t->dev == in->dev && t->ino == in->ino &&
		    (st ? listing_fresh(t->l, st) : t->l->gen == gen)) {
			l = t->l;
			atomic_fetch_add(&l->refs, 1);
			break;
		}
	}
	pthread_mutex_unlock(&transient_lock);
	return l;
}

/* Keep l (its reference is taken over) in the ring. */
static void transient_add(struct hotfs_inode *in, struct hotfs_listing *l)
{
	struct hotfs_listing *old;
	struct transient *t;

	pthread_mutex_lock(&transient_lock);
	t = &transient[transient_next++ % NTRANSIENT];
	old = t->l;
	t->dev = in->dev;
	t->ino = in->ino;
	t->l = l;
	pthread_mutex_unlock(&transient_lock);
	listing_put(old);
}

void dir_free_all(void)
{
	unsigned i;

	for (i = 0; i < NTRANSIENT; i++) {
		listing_put(transient[i].l);
		transient[i].l = NULL;
	}
}

/* Read the whole directory (dfd: its O_PATH fd); st is its stamp from
 * before.  NULL: errno. */
static struct hotfs_listing *listing_read(struct hotfs_inode *in, int dfd,
					  const struct stat *st)
{
	struct hotfs_dirp d = { .in = in, .rec = true };
	struct hotfs_listing *l;
	struct dirent *de;
	DIR *dp;
	int fd, err;

	d.mtime_ns = ts_ns(&st->st_mtim);
	d.ctime_ns = ts_ns(&st->st_ctim);
	d.size = st->st_size;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	dp = fdopendir(fd);
	if (!dp) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	for (;;) {
		errno = 0;
		de = readdir(dp);
		if (!de)
			break;
		rec_add(&d, de);
		if (!d.rec) {
			errno = ENOMEM;
			break;
		}
	}
	err = errno;
	closedir(dp);
	if (err) {
		rec_stop(&d);
		errno = err;
		return NULL;
	}
	l = rec_make(&d);
	if (!l)
		errno = ENOMEM;
	return l;
}

/*
 * The listing a handle-less readdir at off is answered from, referenced.
 * A pass goes on with the listing it started with (its generation is in
 * the offsets), even if a newer one was made meanwhile for another
 * reader: the old one is kept in the ring for that.
 */
static struct hotfs_listing *stateless_listing(struct hotfs *fs,
					       struct hotfs_inode *in,
					       off_t off, int *err)
{
	uint32_t gen = (uint32_t)((uint64_t)off >> 32);
	struct hotfs_listing *l, *old;
	struct stat st;
	int fd;

	l = meta_fs_listing(fs, in, off);
	if (l)
		return l;
	fd = ino_fd(fs->it, in);
	if (fd < 0)
		goto out_err;
	if (fstat(fd, &st) == -1)
		goto out_put;
	pthread_mutex_lock(&in->m);
	l = in->listing;
	if (l && (off != 0 ? l->gen == gen : listing_fresh(l, &st)))
		atomic_fetch_add(&l->refs, 1);
	else
		l = NULL;
	pthread_mutex_unlock(&in->m);
	if (!l)
		l = transient_get(in, off ? NULL : &st, gen);
	if (l) {
		ino_fd_put(in);
		return l;
	}
	/* a new pass, or one whose listing is gone (then it may see an
	 * entry twice or miss one, as after a seekdir across a change) */
	l = listing_read(in, fd, &st);
	if (!l)
		goto out_put;
	ino_fd_put(in);
	pthread_mutex_lock(&in->m);
	old = in->listing;
	if (old)
		atomic_fetch_add(&old->refs, 1);
	pthread_mutex_unlock(&in->m);
	if (listing_try_install(in, l)) {
		if (old)
			transient_add(in, old);	/* for passes under way */
	} else {
		listing_put(old);
		l->bytes = 0;
		transient_add(in, l);
	}
	atomic_fetch_add(&l->refs, 1);
	return l;
out_put:
	fd = errno;
	ino_fd_put(in);
	errno = fd;
out_err:
	*err = errno;
	return NULL;
}

static void hotfs_opendir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct hotfs_dirp *d;
	int fd;

	if (vd_is(ino)) {
		vd_opendir(req, ino, fi);
		return;
	}
	count(&hfs(req)->n_opendir);
	if (hfs(req)->no_opendir) {
		/* success, and the kernel sends no more opendirs */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fd = ifd(req, ino);
	if (fd != -1) {
		int dfd = fd, e;

		fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		e = errno;
		iput(req, ino);
		errno = e;
	}
	if (fd == -1)
		goto out_err;
	d->dp = fdopendir(fd);
	if (!d->dp) {
		close(fd);
		goto out_err;
	}
	fi->fh = (uintptr_t)d;
	d->in = hino(req, ino);
	/* listings are checked against the stamp in every mode: the
	 * kernel's own invalidation races concurrent listers */
	dir_keep_cache(d->in, fd, fi, false);
	listing_open(hfs(req), d, fd);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		closedir(d->dp);
		free(d);
	}
	return;
out_err:
	fuse_reply_err(req, errno);
	free(d);
}

static struct hotfs_dirp *dirp(struct fuse_file_info *fi)
{
	return (struct hotfs_dirp *)(uintptr_t)fi->fh;
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' &&
	       (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Back to the start, with a listing current now (or the source's). */
static void rewind_dir(struct hotfs *fs, struct hotfs_dirp *d)
{
	struct hotfs_listing *old = d->lst;

	rec_stop(d);
	d->lst = NULL;
	listing_open(fs, d, dirfd(d->dp));
	listing_put(old);
	if (!d->lst) {
		seekdir(d->dp, 0);
		d->entry = NULL;
	}
	d->offset = 0;
}

/* The next entry, without consuming it: 1, 0 at the end, or -errno. */
static int peek_entry(struct hotfs_dirp *d, const char **name, uint64_t *ino,
		      unsigned char *type, off_t *next)
{
	if (d->lst) {
		const struct hotfs_lent *e;

		if (d->offset < 0 || (size_t)d->offset >= d->lst->n)
			return 0;
		e = &d->lst->ents[d->offset];
		*name = e->name;
		*ino = e->ino;
		*type = e->type;
		*next = (off_t)((uint64_t)(d->offset + 1) | d->gen_tag);
		return 1;
	}
	if (!d->entry) {
		errno = 0;
		d->entry = readdir(d->dp);
		if (!d->entry) {
			if (errno) {
				rec_stop(d);
				return -errno;
			}
			if (d->rec)
				rec_done(d);
			return 0;
		}
		if (d->rec)
			rec_add(d, d->entry);
	}
	*name = d->entry->d_name;
	*ino = d->entry->d_ino;
	*type = d->entry->d_type;
	*next = d->entry->d_off;
	return 1;
}

static void consume_entry(struct hotfs_dirp *d, off_t next)
{
	d->entry = NULL;
	/* a listing's offsets are positions (tagged with its generation
	 * when read without a handle); a stream's are the source's */
	d->offset = d->lst ? (off_t)((uint64_t)next & 0xffffffffu) : next;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t offset, struct fuse_file_info *fi, bool plus)
{
	struct hotfs_dirp *d = dirp(fi), tmp;
	char *buf, *p;
	size_t rem = size;
	int err = 0;

	if (!d) {		/* no opendir: see stateless_listing() */
		memset(&tmp, 0, sizeof(tmp));
		tmp.in = hino(req, ino);
		tmp.lst = stateless_listing(hfs(req), tmp.in, offset, &err);
		if (!tmp.lst) {
			fuse_reply_err(req, err);
			return;
		}
		tmp.offset = (off_t)((uint64_t)offset & 0xffffffffu);
		tmp.gen_tag = (uint64_t)tmp.lst->gen << 32;
		d = &tmp;
	}
	buf = calloc(1, size);
	if (!buf) {
		if (d == &tmp)
			listing_put(tmp.lst);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	p = buf;
	if (d == &tmp) {
		/* positioned above */
	} else if (offset == 0 && (d->offset != 0 || d->lst)) {
		/* from the start (again): a rewinddir must see what changed
		 * since opendir, and the kernel may have answered the first
		 * pass from its own cache */
		rewind_dir(hfs(req), d);
	} else if (offset != d->offset) {
		if (!d->lst) {
			seekdir(d->dp, offset);
			d->entry = NULL;
			rec_stop(d);	/* not one pass from the start */
		}
		d->offset = offset;
	}
	for (;;) {
		struct fuse_entry_param e;
		unsigned char type = 0;
		const char *name = NULL;
		uint64_t dino = 0;
		size_t entsize;
		off_t nextoff = 0;
		int r;

		r = peek_entry(d, &name, &dino, &type, &nextoff);
		if (r <= 0) {
			err = -r;
			break;
		}
		if (ino == FUSE_ROOT_ID && strcmp(name, hfs(req)->ctldir) == 0) {
			/* shadowed by the control directory */
			consume_entry(d, nextoff);
			continue;
		}
		if (plus) {
			fuse_ino_t entry_ino = 0;

			memset(&e, 0, sizeof(e));
			if (is_dot_or_dotdot(name)) {
				e.attr.st_ino = dino;
				e.attr.st_mode = type << 12;
			} else {
				err = -do_lookup(req, ino, name, &e);
				if (err == ENOENT) {
					/* vanished since readdir: skip it */
					err = 0;
					consume_entry(d, nextoff);
					continue;
				}
				if (err)
					break;
				entry_ino = e.ino;
			}
			entsize = fuse_add_direntry_plus(req, p, rem, name,
							 &e, nextoff);
			if (entsize > rem) {
				if (entry_ino)
					forget_one(req, entry_ino, 1);
				break;
			}
		} else {
			struct stat st = {
				.st_ino = dino,
				.st_mode = type << 12,
			};

			entsize = fuse_add_direntry(req, p, rem, name, &st,
						    nextoff);
			if (entsize > rem)
				break;
		}
		p += entsize;
		rem -= entsize;
		consume_entry(d, nextoff);
	}
	if (d == &tmp)
		listing_put(tmp.lst);
	/* an error after some entries: return what we have */
	if (err && p == buf)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, size - rem);
	free(buf);
}

static void hotfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t offset, struct fuse_file_info *fi)
{
	if (vd_is(ino)) {
		vd_readdir(req, ino, size, offset, fi, false);
		return;
	}
	do_readdir(req, ino, size, offset, fi, false);
}

static void hotfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			      off_t offset, struct fuse_file_info *fi)
{
	if (vd_is(ino)) {
		vd_readdir(req, ino, size, offset, fi, true);
		return;
	}
	do_readdir(req, ino, size, offset, fi, true);
}

static void hotfs_releasedir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	struct hotfs_dirp *d = dirp(fi);

	if (vd_is(ino)) {
		vd_releasedir(req, ino, fi);
		return;
	}

	if (!d) {
		fuse_reply_err(req, 0);
		return;
	}
	closedir(d->dp);
	listing_put(d->lst);
	rec_stop(d);
	free(d);
	fuse_reply_err(req, 0);
}

static void hotfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			   struct fuse_file_info *fi)
{
	int fd, r;

	if (vd_is(ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	if (dirp(fi)) {
		fd = dirfd(dirp(fi)->dp);
		r = datasync ? fdatasync(fd) : fsync(fd);
		fuse_reply_err(req, r == -1 ? errno : 0);
		return;
	}
	/* no opendir: a descriptor for this call */
	r = ifd(req, ino);
	if (r < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fd = openat(r, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = errno;
	iput(req, ino);
	if (fd == -1) {
		fuse_reply_err(req, r);
		return;
	}
	r = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, r == -1 ? errno : 0);
	close(fd);
}

static void hotfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int fd, r;

	if (vd_is(ino))
		ino = FUSE_ROOT_ID;

	fd = ifd(req, ino);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	r = fstatvfs(fd, &sv) == -1 ? errno : 0;
	iput(req, ino);
	if (r)
		fuse_reply_err(req, r);
	else
		fuse_reply_statfs(req, &sv);
}

static void hotfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct hotfs *fs = hfs(req);
	struct cred c;
	char pn[32];
	int r, fd;

	if (vd_is(ino)) {
		fuse_reply_err(req, (mask & W_OK) && ino != VINO_CTL ?
			       EACCES : 0);
		return;
	}
	fd = ifd(req, ino);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	procname(pn, sizeof(pn), fd);
	cred_enter(req, &c);
	r = faccessat(fs->proc_self_fd, pn, mask, AT_EACCESS);
	r = r == -1 ? errno : 0;
	cred_exit(&c);
	iput(req, ino);
	fuse_reply_err(req, r);
}

/* ------------------------------------------------------------------ */
/* Extended attributes */

/*
 * Following /proc/self/fd/N reaches the object the O_PATH fd names, a
 * symlink itself included (the magic link is not followed further), so
 * the path xattr calls work for every type.
 */
static bool xattr_path(fuse_req_t req, struct hotfs_inode *in, char *buf,
		       size_t len)
{
	int fd = ino_fd(hfs(req)->it, in);

	/* a name gone from the source: -1, and the call fails ENOENT */
	snprintf(buf, len, "/proc/self/fd/%d", fd);
	return fd >= 0;
}

/* After the call on xattr_path's path (ino_fd_put keeps errno). */
static void xattr_done(struct hotfs_inode *in, bool pinned)
{
	if (pinned)
		ino_fd_put(in);
}

static void reply_xattr(fuse_req_t req, size_t size, ssize_t n,
			const char *value)
{
	if (n == -1)
		fuse_reply_err(req, errno);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, value, (size_t)n);
}

/* getxattr (name) or listxattr (name == NULL) on the source object */
static void get_or_list_xattr(fuse_req_t req, struct hotfs_inode *in,
			      const char *name, size_t size)
{
	char path[64], *value = NULL;
	bool pinned;
	ssize_t n;

	if (size) {
		value = malloc(size);
		if (!value) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	pinned = xattr_path(req, in, path, sizeof(path));
	n = name ? getxattr(path, name, value, size) :
		   listxattr(path, value, size);
	xattr_done(in, pinned);
	reply_xattr(req, size, n, value);
	free(value);
}

static void hotfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   size_t size)
{
	if (vd_is(ino)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	get_or_list_xattr(req, hino(req, ino), name, size);
}

static void hotfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (vd_is(ino)) {
		if (size)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_xattr(req, 0);
		return;
	}
	get_or_list_xattr(req, hino(req, ino), NULL, size);
}

static void hotfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   const char *value, size_t size, int flags)
{
	struct hotfs_inode *in = hino(req, ino);
	char path[64];
	bool pinned;
	int r;

	if (vd_is(ino)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pinned = xattr_path(req, in, path, sizeof(path));
	meta_fs_change(hfs(req), NULL, in);	/* its ctime moves */
	r = setxattr(path, name, value, size, flags);
	xattr_done(in, pinned);
	fuse_reply_err(req, r == -1 ? errno : 0);
}

static void hotfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct hotfs_inode *in = hino(req, ino);
	char path[64];
	bool pinned;
	int r;

	if (vd_is(ino)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pinned = xattr_path(req, in, path, sizeof(path));
	meta_fs_change(hfs(req), NULL, in);
	r = removexattr(path, name);
	xattr_done(in, pinned);
	fuse_reply_err(req, r == -1 ? errno : 0);
}

/* ------------------------------------------------------------------ */
/* hotfsctl */

static void hotfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
			void *arg, struct fuse_file_info *fi, unsigned flags,
			const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct hotfs *fs = hfs(req);
	struct hotfs_inode *in;
	struct hotfs_ioc io;
	int r;

	(void)arg;
	(void)fi;
	if (vd_is(ino)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	r = ctl_ioc_decode(cmd, flags, in_buf, in_bufsz, out_bufsz, &io);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/* the control channel: root and the mounting user only */
	if (ctx->uid != 0 && ctx->uid != fs->owner_uid) {
		fuse_reply_err(req, EACCES);
		return;
	}
	in = hino(req, ino);
	if (!S_ISREG(in->type)) {
		fuse_reply_err(req, S_ISDIR(in->type) ? EISDIR : EINVAL);
		return;
	}
	if (!fs->cache) {
		memset(&io, 0, sizeof(io));
		io.flags = HOTFS_IOC_F_NOCACHE;
		if (cmd == HOTFS_IOC_INFO)
			fuse_reply_ioctl(req, 0, &io, sizeof(io));
		else
			fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	switch (cmd) {
	case HOTFS_IOC_WARM:
		r = cache_warm(fs->cache, in, &io);
		break;
	case HOTFS_IOC_EVICT:
		r = cache_evict(fs->cache, in, &io);
		break;
	case HOTFS_IOC_PIN:
	case HOTFS_IOC_UNPIN:
		r = cache_pin(fs->cache, in, cmd == HOTFS_IOC_PIN);
		if (!r)
			r = cache_info(fs->cache, in, &io);
		break;
	case HOTFS_IOC_INFO:
		r = cache_info(fs->cache, in, &io);
		break;
	default:
		r = -ENOTTY;
		break;
	}
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, &io, sizeof(io));
}

/* ------------------------------------------------------------------ */

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
	     (fs->watch && ino_root(fs->it)->wd > 0 &&
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
	/* no writeback cache: every write reaches the source at once */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* locks stay in the kernel, coherent across users of the mount */
	conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
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
