// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The virtual control directory (see include/hotfs/ctl.h).
 *
 * stats, stats.json and metrics are rendered once per open, so a reader sees one
 * consistent snapshot however it reads (they are opened direct_io: their
 * size in stat is 0).  ctl takes one command per write(2) and keeps the
 * answer for the following read(2)s of the same open file:
 *   reset-stats          zero the read-path and promotion counters
 *   store on             open the store that could not open at mount
 *                        (fs_store_on), answered "ok: ..." or "error: ..."
 *   set KEY=VALUE ...    change options while mounted (fs_set): all of
 *                        them or none, answered the same way
 * (parsed by ctl_parse_cmd, src/lib/ctl_parse.c).
 * ctl is mode 0600 and owned by the mounting user; open checks that too,
 * so that without default_permissions other users are still refused.
 *
 * Without open round trips (fs->no_open, revalidate=never; see
 * src/fuse/fuse_file.c) there is no open file to keep a snapshot in: each
 * getattr renders one and drops the file's pages from the kernel's cache
 * (the kernel asks before a read that goes past the size it knows: the
 * files' attributes time out at once), a read from the start renders a
 * new one unless a getattr just did (a read within the size the kernel
 * knows comes without a getattr: a file over a page long was served the
 * kernel's old pages), reads serve the last one, the pages read are
 * dropped at the next tick (vd_expire), and ctl's answer is the last
 * command's.
 * Two readers at the same moment may then read each other's snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/ctl.h"
#include "hotfs/fs.h"
#include "hotfs/log.h"
#include "hotfs/settings.h"

/* An open virtual file; requests on one open file may run at once. */
struct vfh {
	struct vfh *prev, *next;	/* open ones, under vfh_lock */
	pthread_mutex_t m;	/* protects buf, len */
	char *buf;
	size_t len;
};

/* the kernel does not release what is open when the daemon is stopped */
static pthread_mutex_t vfh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfh *vfh_list;

static void vfh_link(struct vfh *h)
{
	pthread_mutex_lock(&vfh_lock);
	h->next = vfh_list;
	if (vfh_list)
		vfh_list->prev = h;
	vfh_list = h;
	pthread_mutex_unlock(&vfh_lock);
}

static void vfh_free(struct vfh *h)
{
	pthread_mutex_lock(&vfh_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		vfh_list = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&vfh_lock);
	pthread_mutex_destroy(&h->m);
	free(h->buf);
	free(h);
}

void vd_free_all(void)
{
	while (vfh_list)
		vfh_free(vfh_list);
}

static struct hotfs *vfs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Without open: the last snapshot of each file, under snap_lock. */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *buf;
	size_t len;
	size_t told;		/* the size last given to the kernel */
	struct timespec time;
	bool read;		/* the kernel has pages of it (vd_expire) */
	bool used;		/* read since it was rendered */
	int64_t at;		/* when it was rendered (CLOCK_MONOTONIC) */
} snap[VINO__END];

/* A read from the start serves the snapshot a lookup or getattr made
 * this shortly before (its size is the one the kernel was told), if no
 * read has served it yet; else it renders a new one. */
#define SNAP_FRESH_NS	100000000LL

/* Replace ino's snapshot with buf (taken over) and stamp it now. */
static void snap_set(fuse_ino_t ino, char *buf, size_t len)
{
	char *old;

	pthread_mutex_lock(&snap_lock);
	old = snap[ino].buf;
	snap[ino].buf = buf;
	snap[ino].len = len;
	snap[ino].used = false;
	snap[ino].at = clock_mono_ns();
	clock_gettime(CLOCK_REALTIME, &snap[ino].time);
	pthread_mutex_unlock(&snap_lock);
	free(old);
}

static enum stats_fmt vfmt(fuse_ino_t ino)
{
	return ino == VINO_STATS_JSON ? STATS_JSON :
	       ino == VINO_METRICS ? STATS_PROM : STATS_TEXT;
}

/* Render stats, stats.json or metrics into its snapshot. */
static int snap_render(struct hotfs *fs, fuse_ino_t ino)
{
	char *buf;
	size_t len;
	int r;

	if (ino != VINO_STATS && ino != VINO_STATS_JSON &&
	    ino != VINO_METRICS)
		return 0;
	r = stats_render(fs, vfmt(ino), &buf, &len);
	if (r == 0)
		snap_set(ino, buf, len);
	return r;
}

void vd_free_snapshots(void)
{
	for (unsigned i = 0; i < VINO__END; i++) {
		free(snap[i].buf);
		snap[i].buf = NULL;
	}
}

bool vd_is_name(struct hotfs *fs, fuse_ino_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && strcmp(name, fs->ctldir) == 0;
}

static const char *const vnames[] = {
	[VINO_STATS] = "stats",
	[VINO_STATS_JSON] = "stats.json",
	[VINO_CTL] = "ctl",
	[VINO_METRICS] = "metrics",
};

static void vstat(struct hotfs *fs, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	/* st_ino far from any real one; small node ids stay internal */
	st->st_ino = 0xFFFFFF00u + ino;
	st->st_uid = fs->owner_uid;
	st->st_gid = fs->owner_gid;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mount_time;
	if (fs->no_open && ino != VINO_DIR) {
		pthread_mutex_lock(&snap_lock);
		st->st_size = (off_t)snap[ino].len;
		snap[ino].told = snap[ino].len;
		if (snap[ino].buf)
			st->st_mtim = st->st_ctim = snap[ino].time;
		pthread_mutex_unlock(&snap_lock);
	}
	if (ino == VINO_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (ino == VINO_CTL ? 0600 : 0444);
		st->st_nlink = 1;
	}
}

static void ventry(struct hotfs *fs, fuse_ino_t ino,
		   struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = fs->no_open && ino != VINO_DIR ? 0.0 : 1.0;
	e->entry_timeout = 1.0;
	if (fs->no_open)
		snap_render(fs, ino);
	vstat(fs, ino, &e->attr);
}

/* The control inode of name in parent, or 0. */
static fuse_ino_t vfind(fuse_ino_t parent, const char *name)
{
	fuse_ino_t i;

	if (parent == FUSE_ROOT_ID)
		return VINO_DIR;
	for (i = VINO_STATS; i < VINO__END; i++)
		if (strcmp(name, vnames[i]) == 0)
			return i;
	return 0;
}

void vd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	fuse_ino_t i = vfind(parent, name);

	if (i)
		ventry(vfs(req), i, &e);
	if (!i)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_entry(req, &e);
}

void vd_getattr(fuse_req_t req, fuse_ino_t ino)
{
	struct hotfs *fs = vfs(req);
	struct stat st;
	int r = fs->no_open ? snap_render(fs, ino) : 0;

	if (r < 0)
		goto out;
	/*
	 * The read that asked must not find the last snapshot's pages (or
	 * ctl's written command) in the kernel's cache.  A new size in the
	 * reply drops them; at the same size they are dropped here, before
	 * the reply (the kernel then ignores the reply's attributes, which
	 * only matters for the size).
	 */
	if (fs->no_open && ino != VINO_DIR) {
		bool same;

		pthread_mutex_lock(&snap_lock);
		same = snap[ino].len == snap[ino].told;
		pthread_mutex_unlock(&snap_lock);
		if (same)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	}
	vstat(fs, ino, &st);
out:
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st,
				fs->no_open && ino != VINO_DIR ? 0.0 : 1.0);
}

static bool may_control(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	return ctx->uid == 0 || ctx->uid == vfs(req)->owner_uid;
}

/* A control file's open handle in *hp (its snapshot taken, but for
 * ctl's): 0 or -errno. */
static int vopen(fuse_req_t req, fuse_ino_t ino, int flags, struct vfh **hp)
{
	struct vfh *h;
	int r;

	if (ino == VINO_DIR)
		return -EISDIR;
	if (ino == VINO_CTL ? !may_control(req) :
	    (flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->m, NULL);
	vfh_link(h);
	if (ino != VINO_CTL) {
		r = stats_render(vfs(req), vfmt(ino), &h->buf, &h->len);
		if (r < 0) {
			vfh_free(h);
			return r;
		}
	}
	*hp = h;
	return 0;
}

void vd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vfh *h = NULL;
	int r = vopen(req, ino, fi->flags, &h);

	if (!r) {
		fi->fh = (uintptr_t)h;
		fi->direct_io = 1;
		fi->nonseekable = 0;
	}
	if (r < 0)
		fuse_reply_err(req, -r);
	else if (fuse_reply_open(req, fi) == -ENOENT)
		vfh_free(h);
}

/* size bytes of buf (len long) from off, copied; *size is cut to fit. */
static char *copy_out(const char *buf, size_t len, size_t *size, off_t off)
{
	char *copy = NULL;

	if (off >= 0 && (size_t)off < len) {
		if (*size > len - (size_t)off)
			*size = len - (size_t)off;
		copy = malloc(*size);
		if (copy)
			memcpy(copy, buf + off, *size);
	} else {
		*size = 0;
	}
	return copy;
}

void vd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct vfh *h = (struct vfh *)(uintptr_t)fi->fh;
	char *copy = NULL;
	int r = 0;

	if (!h && ino == VINO_CTL && !may_control(req)) {
		r = -EACCES;
	} else if (!h) {	/* without open: the last snapshot */
		/* a read from the start: a new snapshot (a read within the
		 * size the kernel knows comes without the getattr that would
		 * make one), unless a getattr just made one */
		pthread_mutex_lock(&snap_lock);
		if (off == 0 && ino != VINO_CTL &&
		    (snap[ino].used ||
		     clock_mono_ns() - snap[ino].at >= SNAP_FRESH_NS)) {
			pthread_mutex_unlock(&snap_lock);
			snap_render(vfs(req), ino);
			pthread_mutex_lock(&snap_lock);
		}
		if (!snap[ino].buf && ino != VINO_CTL) {
			pthread_mutex_unlock(&snap_lock);
			snap_render(vfs(req), ino);
			pthread_mutex_lock(&snap_lock);
		}
		copy = copy_out(snap[ino].buf, snap[ino].len, &size, off);
		snap[ino].read = snap[ino].used = ino != VINO_CTL;
		pthread_mutex_unlock(&snap_lock);
	} else {
		pthread_mutex_lock(&h->m);
		copy = copy_out(h->buf, h->len, &size, off);
		pthread_mutex_unlock(&h->m);
	}
	if (!r && size && !copy)
		r = -ENOMEM;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, copy, size);
	free(copy);
}

void vd_expire(struct hotfs *fs)
{
	fuse_ino_t i;

	if (!fs->se)	/* the flags are set by reads without open alone */
		return;
	for (i = VINO_STATS; i < VINO__END; i++) {
		bool read;

		if (i == VINO_CTL)
			continue;
		pthread_mutex_lock(&snap_lock);
		read = snap[i].read;
		snap[i].read = false;
		pthread_mutex_unlock(&snap_lock);
		if (read)
			fuse_lowlevel_notify_inval_inode(fs->se, i, 0, 0);
	}
}

/* One "store on" at a time. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

int fs_store_on(struct hotfs *fs, char *msg, size_t len)
{
	struct hotfs_cache *c;
	char err[512];
	int fd, r;

	pthread_mutex_lock(&one_at_a_time);
	/* the store opens with the options "set" may be changing */
	settings_lock();
	c = fs_cache(fs);
	if (c) {
		struct hotfs_store_stats ss;

		st_get_stats(c->st, &ss);
		if (ss.state == ST_OFF) {
			/* its files may be held by readers: only a new
			 * mount replaces it */
			snprintf(msg, len, "the store went off while mounted "
				 "(%s); it is opened again at the next mount",
				 ss.reason);
			r = -EBUSY;
		} else {
			snprintf(msg, len, "the store is %s already",
				 st_state_name(ss.state));
			r = 1;
		}
		goto out;
	}
	if (fs->o->nocache) {
		snprintf(msg, len, "mounted with -o nocache: no store");
		r = -EINVAL;
		goto out;
	}
	fd = open(fs->o->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, sizeof(err), "source '%s': %s", fs->o->source,
			 strerror(-r));
	} else {
		r = cache_open(&c, fs->o, fd, err, sizeof(err));
		close(fd);
	}
	if (r == 0) {
		r = cache_start(c, fs->it, fs->proc_self_fd);
		if (r < 0) {
			snprintf(err, sizeof(err), "promotion thread: %s",
				 strerror(-r));
			cache_close(c);
		}
	}
	if (r < 0) {
		char *why = strdup(err);

		pthread_mutex_lock(&fs->cache_lock);
		if (why) {
			free(fs->cache_off);
			fs->cache_off = why;
		}
		clock_gettime(CLOCK_REALTIME, &fs->cache_off_since);
		pthread_mutex_unlock(&fs->cache_lock);
		hotfs_log(LOG_ERR, "store on: %s; cache is still off\n", err);
		snprintf(msg, len, "%s", err);
		goto out;
	}
	__atomic_store_n(&fs->cache, c, __ATOMIC_RELEASE);
	if (cache_usable(c, err, sizeof(err))) {
		hotfs_log(LOG_NOTICE, "store on: the cache store is open, "
			  "caching resumes\n");
		snprintf(msg, len, "the store is on");
	} else {
		hotfs_log(LOG_ERR, "store on: %s\n", err);
		snprintf(msg, len, "the store is open: %s", err);
	}
	r = 0;
out:
	settings_unlock();
	pthread_mutex_unlock(&one_at_a_time);
	return r;
}

/* The answer to a command (malloc'd), and whether it succeeded. */
static char *run_cmd(struct hotfs *fs, int r, const char *cmd, bool *ok)
{
	char msg[768], *ans = NULL;
	int n = -1;

	*ok = r >= 0;
	if (r == CTL_RESET_STATS) {
		stats_reset(fs);
		n = asprintf(&ans, "ok\n");
	} else if (r == CTL_SET) {
		struct ctl_set set;

		r = ctl_parse_set(cmd + 4, &set, msg, sizeof(msg));
		if (r == 0)
			r = fs_set(fs, &set, msg, sizeof(msg));
		n = asprintf(&ans, "%s: %s\n", r < 0 ? "error" : "ok", msg);
	} else if (r == CTL_STORE_ON) {
		/* a refusal is the command's answer, not a failed write */
		r = fs_store_on(fs, msg, sizeof(msg));
		n = asprintf(&ans, "%s: %s\n", r < 0 ? "error" : "ok", msg);
	} else {
		n = asprintf(&ans, "error: unknown command '%s'\n", cmd);
	}
	return n < 0 ? NULL : ans;
}

/* A command written to ctl (h: its open handle, or NULL) run, and its
 * answer kept for the reads that follow: 0 or -errno (-EINVAL: the
 * command failed, its answer says why). */
static int vwrite(fuse_req_t req, fuse_ino_t ino, const char *buf,
		  size_t size, struct vfh *h)
{
	char cmd[4096], *ans;
	bool ok;
	int r;

	if (ino != VINO_CTL || (!h && !may_control(req)))
		return -EACCES;
	r = ctl_parse_cmd(buf, size, cmd, sizeof(cmd));
	if (r == -E2BIG)
		return r;
	ans = run_cmd(vfs(req), r, cmd, &ok);
	if (!ans)
		return -ENOMEM;
	if (!h) {	/* without open: the answer is the file's snapshot */
		snap_set(VINO_CTL, ans, strlen(ans));
	} else {
		pthread_mutex_lock(&h->m);
		free(h->buf);
		h->buf = ans;
		h->len = strlen(ans);
		pthread_mutex_unlock(&h->m);
	}
	return ok ? 0 : -EINVAL;
}

void vd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi)
{
	int r = vwrite(req, ino, buf, size, (struct vfh *)(uintptr_t)fi->fh);

	(void)off;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, size);
}

void vd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vfh *h = (struct vfh *)(uintptr_t)fi->fh;

	(void)ino;
	if (h)
		vfh_free(h);
	fuse_reply_err(req, 0);
}

void vd_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fi->fh = 0;
	if (ino != VINO_DIR)
		fuse_reply_err(req, ENOTDIR);
	else
		fuse_reply_open(req, fi);
}

/* The control directory's entries from off into buf (size bytes): the
 * bytes filled. */
static size_t vfill(fuse_req_t req, char *buf, size_t size, off_t off,
		    bool plus)
{
	struct hotfs *fs = vfs(req);
	size_t rem = size;
	char *p = buf;
	fuse_ino_t i;

	/* offsets: 1 ".", 2 "..", then 3.. the files */
	for (i = (fuse_ino_t)off + 1; i < 3 + (VINO__END - VINO_STATS); i++) {
		struct fuse_entry_param e;
		const char *name;
		fuse_ino_t vi;
		size_t sz;

		if (i == 1) {
			name = ".";
			vi = VINO_DIR;
		} else if (i == 2) {
			name = "..";
			vi = VINO_DIR;
		} else {
			vi = VINO_STATS + (i - 3);
			name = vnames[vi];
		}
		ventry(fs, vi, &e);
		if (plus) {
			if (i <= 2)	/* no lookup count for . and .. */
				e.ino = 0;
			sz = fuse_add_direntry_plus(req, p, rem, name, &e,
						    (off_t)i);
		} else {
			sz = fuse_add_direntry(req, p, rem, name, &e.attr,
					       (off_t)i);
		}
		if (sz > rem)
			break;
		p += sz;
		rem -= sz;
	}
	return size - rem;
}

void vd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi, bool plus)
{
	char *buf = calloc(1, size);

	(void)ino;
	(void)fi;
	if (!buf)
		fuse_reply_err(req, ENOMEM);
	else
		fuse_reply_buf(req, buf, vfill(req, buf, size, off, plus));
	free(buf);
}

void vd_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}
