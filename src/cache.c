// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cache glue and the cached read path (see include/hotfs/cache.h).
 *
 * A FUSE read of [off, off + size) is cut at extent boundaries into
 * segments.  Each segment is an access for the policy (unless the same
 * handle's previous read was in the same extent, or the handle is past
 * seqcutoff), and is looked up in the store.  If no segment is cached the
 * read is answered from the source (read into a buffer, not spliced, so
 * that a read failing part way is an error, not a short read: EOF to the
 * kernel); otherwise every
 * segment is submitted at once on this thread's io_uring: cached ones from
 * the store's data file (with their block checksums when the read is not
 * the whole extent), uncached ones from the source, and the request is
 * answered with one reply.  Cached data that fails its checksum, or that
 * the device fails to return, is read from the source instead: the cache
 * can cost speed, never correctness.  A large or sequential read with
 * every segment cached is served from whole extents read ahead with
 * O_DIRECT instead (include/hotfs/readahead.h): one device read and one
 * copy per byte, and no second copy of the file in the page cache.
 *
 * A missed extent whose count reaches the threshold is queued for
 * promotion after the reply is sent; if the read covered the whole extent
 * its bytes go with it, so the slow disk is not read twice.
 *
 * Locks: none held across I/O or replies.  in->m guards write_gen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <xxhash.h>

#include "hotfs/cache.h"
#include "hotfs/ctl.h"
#include "hotfs/log.h"
#include "hotfs/meta_fs.h"
#include "hotfs/policy_state.h"
#include "hotfs/readahead.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/uring.h"

void cache_key(const struct hotfs_cache *c, dev_t dev, ino_t ino,
	       struct hotfs_key *k)
{
	/* device numbers of loop and network filesystems change across
	 * reboots; the source root's device is stable as "0".  Filesystems
	 * mounted inside the source are not probed (hotfs/srcprobe.h):
	 * their device numbers are reused and their inode numbers may
	 * not be kept across their mounts, so their keys carry a salt of
	 * this run and nothing of theirs is found after a restart */
	k->dev = dev == c->root_dev ? 0 :
		 (c->run_salt << 32) ^ (uint64_t)dev;
	k->ino = (uint64_t)ino;
}

void cache_stamp(const struct stat *st, struct hotfs_stamp *s)
{
	s->ino = (uint64_t)st->st_ino;
	s->size = (uint64_t)st->st_size;
	s->mtime_ns = ts_ns(&st->st_mtim);
	s->ctime_ns = ts_ns(&st->st_ctim);
}

static unsigned ilog2u(uint32_t v)
{
	unsigned r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static bool store_exists(const char *dir)
{
	char *p;
	bool r;

	if (asprintf(&p, "%s/superblock", dir) < 0)
		return false;
	r = access(p, F_OK) == 0;
	free(p);
	return r;
}

static bool keep_extent(void *arg, const struct hotfs_extent_info *x)
{
	struct hotfs_cache *c = arg;

	if (pins_has(c->pins, &x->key))
		return true;
	return pol_keep(c->pol, pol_hash(&x->key, x->extno), x->hot);
}

/*
 * The access counts of the last run, if they are about this source and
 * extent size (the tag): a file read once before the restart is then
 * promoted at its next read, as without the restart.  Counts are only
 * hints: a damaged file costs them, never the mount.
 */
static void load_counts(struct hotfs_cache *c, const struct hotfs_opts *o,
			const char *ident, size_t len)
{
	char why[96];
	int r;

	c->counts_tag = XXH3_64bits_withSeed(ident, len, o->extent);
	c->dirfd = open(o->cachedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dirfd < 0) {
		hotfs_log(LOG_WARNING, "cachedir '%s': %s; access counts "
			  "will not be kept\n", o->cachedir, strerror(errno));
		return;
	}
	if (o->reset || !hotfs_src.ids_kept) {
		unlinkat(c->dirfd, POL_STATE_FILE, 0);
		return;
	}
	r = pol_state_load(c->pol, c->dirfd, c->counts_tag, why, sizeof(why));
	if (r == 0) {
		c->counts_saved = pol_accesses(c->pol);
		hotfs_log(LOG_INFO, "access counts of the last run restored "
			  "(%llu accesses counted)\n",
			  (unsigned long long)c->counts_saved);
	} else if (r != -ENOENT) {
		hotfs_log(LOG_WARNING, "cachedir '%s': %s: %s; access counts "
			  "start from zero\n", o->cachedir, POL_STATE_FILE,
			  why);
	}
}

void cache_save_counts(struct hotfs_cache *c)
{
	uint64_t n = pol_accesses(c->pol);
	int r;

	if (c->dirfd < 0 || n == c->counts_saved)
		return;
	r = pol_state_save(c->pol, c->dirfd, c->counts_tag);
	if (r < 0) {
		hotfs_log(LOG_WARNING, "saving the access counts: %s\n",
			  strerror(-r));
		return;
	}
	c->counts_saved = n;
}

int cache_open(struct hotfs_cache **out, const struct hotfs_opts *o,
	       int root_fd, char *err, size_t errlen)
{
	struct hotfs_store_params sp = { 0 };
	struct pol_params pp = { 0 };
	struct hotfs_cache *c;
	struct statfs sfs;
	struct stat st;
	char *ident = NULL;
	uint32_t salt;
	int len, r, tries;

	if (fstat(root_fd, &st) == -1 || fstatfs(root_fd, &sfs) == -1) {
		snprintf(err, errlen, "source '%s': %s", o->source,
			 strerror(errno));
		return -EIO;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->extent = o->extent;
	c->ext_shift = ilog2u(o->extent);
	c->root_dev = st.st_dev;
	if (getrandom(&salt, sizeof(salt), 0) != sizeof(salt))
		salt = (uint32_t)time(NULL) ^ (uint32_t)getpid();
	c->run_salt = salt ? salt : 1;
	c->seqcutoff = o->seqcutoff;
	c->writemode = o->writemode;
	c->proc_self_fd = -1;
	c->dirfd = -1;
	clock_gettime(CLOCK_MONOTONIC, &c->stats.started);
	c->stats.reset = c->stats.started;

	/* the source's identity: its path, its filesystem, its root */
	len = asprintf(&ident, "%s\n%08x%08x\n%llu", o->source,
		       (unsigned)sfs.f_fsid.__val[0],
		       (unsigned)sfs.f_fsid.__val[1],
		       (unsigned long long)st.st_ino);
	if (len < 0) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto bad_free;
	}
	sp.ident = ident;
	sp.ident_len = (size_t)len;
	sp.extent = o->extent;
	sp.reset = o->reset;
	/* inode numbers of another mount of the source may name other
	 * files (include/hotfs/srcprobe.h): nothing is kept for them */
	sp.forget = !hotfs_src.ids_kept;
	if (o->cachesize) {
		sp.capacity = o->cachesize;
	} else if (o->cachesize_pct) {
		r = st_size_from_fs(o->cachedir, o->cachesize_pct, false,
				    &sp.capacity);
		if (r < 0) {
			snprintf(err, errlen, "cachedir '%s': %s",
				 o->cachedir, strerror(-r));
			goto bad_free;
		}
	}
	pp.threshold = (unsigned)o->threshold;
	r = pol_new(&pp, &c->pol);
	if (r < 0) {
		snprintf(err, errlen, "policy: %s", strerror(-r));
		goto bad_free;
	}
	/* region recycling asks the policy which extents to copy forward */
	sp.keep = keep_extent;
	sp.keep_arg = c;
	/* not given: as recorded, or 90% of the free space for a new store */
	if (!sp.capacity && (o->reset ||
	    faccessat(AT_FDCWD, o->cachedir, F_OK, 0) != 0 ||
	    !store_exists(o->cachedir))) {
		r = st_size_from_fs(o->cachedir, 90, true, &sp.capacity);
		if (r < 0) {
			snprintf(err, errlen, "cachedir '%s': %s",
				 o->cachedir, strerror(-r));
			goto bad_pol;
		}
	}
	r = st_open(o->cachedir, &sp, &c->st, err, errlen);
	/* "umount; mount" again: the old daemon may still be exiting and
	 * holding the cachedir's lock for a moment */
	for (tries = 0; r == -EBUSY && tries < 100; tries++) {
		usleep(50000);
		r = st_open(o->cachedir, &sp, &c->st, err, errlen);
	}
	if (r < 0)
		goto bad_pol;
	{
		struct hotfs_store_stats ss;

		/* counts age over about 8 cache-fulls of accesses */
		st_get_stats(c->st, &ss);
		pol_set_cache(c->pol, ss.capacity >> c->ext_shift);
	}
	load_counts(c, o, ident, (size_t)len);
	r = pins_open(&c->pins, o->cachedir, o->reset || !hotfs_src.ids_kept);
	if (r < 0) {
		snprintf(err, errlen, "cachedir '%s': pins: %s", o->cachedir,
			 strerror(-r));
		goto bad_store;
	}
	r = pr_new(&c->pr, c, o->promote_rate);
	if (r < 0) {
		snprintf(err, errlen, "promotion: %s", strerror(-r));
		goto bad_pins;
	}
	free(ident);
	*out = c;
	return 0;
bad_pins:
	pins_close(c->pins);
bad_store:
	if (c->dirfd >= 0)
		close(c->dirfd);
	st_close(c->st);
bad_pol:
	pol_free(c->pol);
bad_free:
	free(ident);
	free(c);
	return r;
}

int cache_start(struct hotfs_cache *c, struct hotfs_itable *it,
		int proc_self_fd)
{
	char why[128];
	int r;

	c->it = it;
	c->proc_self_fd = proc_self_fd;
	/* after daemonizing: it has a thread */
	r = ra_new(&c->ra, c->st, c->extent, 0, why, sizeof(why));
	if (r < 0)
		hotfs_log(LOG_INFO, "cachedir: no read-ahead of cached "
			  "extents (%s)\n", why);
	return pr_start(c->pr);
}

void cache_close(struct hotfs_cache *c)
{
	if (!c)
		return;
	pr_free(c->pr);		/* stops the thread, drops the queue */
	ra_free(c->ra);
	cache_save_counts(c);
	if (c->dirfd >= 0)
		close(c->dirfd);
	st_commit(c->st);
	st_close(c->st);
	pins_close(c->pins);
	pol_free(c->pol);
	free(c);
}

static uint32_t ext_len(const struct hotfs_cache *c, uint32_t extno,
			uint64_t size)
{
	uint64_t start = (uint64_t)extno << c->ext_shift;

	if (start >= size)
		return 0;
	return size - start < c->extent ? (uint32_t)(size - start) :
	       c->extent;
}

/*
 * The extents [*first, *last] of a write of len bytes at off (len 0, a
 * size change, or no cache to say the extent size: the whole file).
 */
static void wr_span(const struct hotfs_cache *c, uint64_t off, uint64_t len,
		    uint32_t *first, uint32_t *last)
{
	uint64_t f, l;

	*first = 0;
	*last = UINT32_MAX;
	if (!c || !len)
		return;
	f = off >> c->ext_shift;
	l = len == CACHE_WR_TO_END || off + len < off ? UINT32_MAX :
	    (off + len - 1) >> c->ext_shift;
	*first = f < UINT32_MAX ? (uint32_t)f : UINT32_MAX;
	*last = l < UINT32_MAX ? (uint32_t)l : UINT32_MAX;
}

/* The source object's attributes now, through the O_PATH fd the write
 * holds (w->fd, -1: none). */
static bool stat_inode(const struct cache_wr *w, struct stat *st)
{
	return w->fd >= 0 && fstatat(w->fd, "", st, AT_EMPTY_PATH) == 0;
}

void cache_write_begin(struct hotfs_cache *c, struct hotfs_itable *it,
		       struct hotfs_inode *in, struct cache_wr *w,
		       uint64_t off, uint64_t len)
{
	struct stat st;
	uint32_t first, last;

	bool have;

	wr_span(c, off, len, &first, &last);
	meta_note_write(in);	/* before the change: see meta_fs.h */
	/* in use until cache_write_end: the fd budget never closes it
	 * meanwhile (before m: ino_fd takes it) */
	w->fd = ino_fd(it, in);
	pthread_mutex_lock(&in->m);
	w->gen = ++in->write_gen;
	if (!in->wr_inflight++ || first < in->wr_lo)
		in->wr_lo = first;
	if (in->wr_inflight == 1 || last > in->wr_hi)
		in->wr_hi = last;
	/* under m: a change that ends meanwhile has recorded its stamp */
	have = stat_inode(w, &st);
	stamp_change_begin(in, have ? &st : NULL);
	pthread_mutex_unlock(&in->m);
	w->have_old = c && have;
	if (w->have_old)
		cache_stamp(&st, &w->old);
}

/* The end of a change of the mount's own (hotfs/stamp.h); m held. */
static void change_end(struct hotfs_inode *in, const struct cache_wr *w)
{
	struct stat st;
	bool have = stamp_change_last(in) && stat_inode(w, &st);

	stamp_change_end(in, have ? &st : NULL);
}

/*
 * writethrough: the new contents of extent e, built from its cached copy
 * (under the old stamp) and the written bytes; NULL if it was not cached.
 */
static char *patched_extent(struct hotfs_cache *c, const struct hotfs_key *k,
			    const struct cache_wr *w, uint32_t e,
			    uint64_t off, uint64_t len, const char *data,
			    uint64_t new_size, uint32_t *elen)
{
	uint64_t es = (uint64_t)e << c->ext_shift, ee, ws, we;
	uint32_t n = ext_len(c, e, new_size), oldn = ext_len(c, e,
							     w->old.size);
	char *buf;
	ssize_t got;

	if (!n || n != oldn)	/* the extent's length changed: drop it */
		return NULL;
	buf = malloc(n);
	if (!buf)
		return NULL;
	got = st_read(c->st, k, e, &w->old, 0, buf, n);
	if (got != (ssize_t)n) {
		free(buf);
		return NULL;
	}
	ee = es + n;
	ws = off > es ? off : es;
	we = off + len < ee ? off + len : ee;
	if (we > ws)
		memcpy(buf + (ws - es), data + (ws - off), we - ws);
	*elen = n;
	return buf;
}

void cache_write_end(struct hotfs_cache *c, struct hotfs_inode *in,
		     struct cache_wr *w, uint64_t off, uint64_t len,
		     const void *data)
{
	struct hotfs_stamp now;
	struct hotfs_key k;
	struct stat st;
	uint32_t first = 0, count = 0, e, nb = 0;
	char *bufs[8] = { 0 };
	uint32_t lens[8] = { 0 }, exts[8] = { 0 };
	bool have_now;
	unsigned i;

	if (!c) {
		pthread_mutex_lock(&in->m);
		in->wr_inflight--;
		change_end(in, w);
		pthread_mutex_unlock(&in->m);
		if (w->fd >= 0)
			ino_fd_put(in);
		return;
	}
	cache_key(c, in->dev, in->ino, &k);
	have_now = w->have_old && stat_inode(w, &st);
	/* a stamp the next change in the same clock tick may keep (a
	 * coarse or network source): what is cached is dropped, not
	 * carried over to it */
	if (have_now && srcprobe_racy_now(ts_ns(&st.st_mtim),
					  ts_ns(&st.st_ctim)))
		have_now = false;
	if (have_now) {
		cache_stamp(&st, &now);
		if (len) {
			uint64_t last = len == CACHE_WR_TO_END ||
					off + len < off ? UINT32_MAX :
					(off + len - 1) >> c->ext_shift;

			/* past ST_EXT_LIMIT nothing is cached: first at
			 * the limit and count 0 drop nothing */
			first = off >> c->ext_shift < ST_EXT_LIMIT ?
				(uint32_t)(off >> c->ext_shift) :
				ST_EXT_LIMIT;
			count = last >= UINT32_MAX ? 0 :
				(uint32_t)(last - first + 1);
			if (!count)	/* to the end of the file */
				count = UINT32_MAX - first;
		}
	}
	/* writethrough: the touched extents that were cached, patched */
	if (have_now && c->writemode == HOTFS_WRITETHROUGH && data && len &&
	    len != CACHE_WR_TO_END && count <= 8)
		for (e = first; e < first + count; e++) {
			bufs[nb] = patched_extent(c, &k, w, e, off, len, data,
						  now.size, &lens[nb]);
			if (bufs[nb])
				exts[nb++] = e;
		}
	/*
	 * Under the inode lock, like a promotion's insert: the hint then
	 * says truly whether anything of the file is left, and a promotion
	 * either came before (and is dropped here) or sees the generation
	 * bumped below (and gives up).
	 */
	pthread_mutex_lock(&in->m);
	/*
	 * Other writes in flight: the store may hold their extents as they
	 * were before them, under the stamp this write found (they had not
	 * landed then), which the restamp would carry over to the new
	 * stamp, theirs included.  Drop their span as well.
	 */
	if (in->wr_inflight > 1 && have_now) {
		uint64_t lo = in->wr_lo, hi = (uint64_t)in->wr_hi + 1;

		if (count) {
			lo = first < lo ? first : lo;
			hi = (uint64_t)first + count > hi ?
			     (uint64_t)first + count : hi;
		}
		if (lo > ST_EXT_LIMIT)
			lo = ST_EXT_LIMIT;
		first = (uint32_t)lo;
		count = hi > UINT32_MAX ? UINT32_MAX - first :
			(uint32_t)(hi - lo);
		if (!count)
			count = UINT32_MAX - first;
	}
	if (in->cached_extents_hint) {
		if (!have_now) {
			st_invalidate(c->st, &k, 0, 0, ST_INVAL_WRITE);
			in->cached_extents_hint = 0;
		} else if (st_restamp(c->st, &k, &w->old, &now, first,
				      count) == 0) {
			in->cached_extents_hint = 0;
		}
		/* the patched extents, unless another write came since */
		for (i = 0; i < nb; i++)
			if (in->write_gen == w->gen &&
			    st_insert(c->st, &k, exts[i], &now, bufs[i],
				      lens[i]) >= 0) {
				stats_add(&c->stats, STAT_WRITETHROUGH, 1);
				if (in->cached_extents_hint <= exts[i])
					in->cached_extents_hint = exts[i] + 1ull;
			}
		stats_add(&c->stats, STAT_INVAL_WRITE, 1);
	}
	/* a read that began during the write may hold bytes from before it
	 * landed: promotions it queued must not be inserted */
	in->write_gen++;
	in->wr_inflight--;
	/* our own write: the kernel's pages and attributes followed it */
	change_end(in, w);
	pthread_mutex_unlock(&in->m);
	if (w->fd >= 0)
		ino_fd_put(in);
	for (i = 0; i < nb; i++)
		free(bufs[i]);
}

static pthread_mutex_t fh_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hotfs_fh *fh_list;	/* protected by fh_list_lock */

static struct hotfs_fh *fh_alloc(int fd)
{
	struct hotfs_fh *fh = calloc(1, sizeof(*fh));

	if (!fh)
		return NULL;
	fh->fd = fd;
	pthread_mutex_init(&fh->m, NULL);
	for (unsigned i = 0; i < FH_RECENT; i++)
		fh->recent[i] = FH_NO_EXT;
	seq_init(&fh->seq);
	return fh;
}

struct hotfs_fh *fh_new_shared(void)
{
	struct hotfs_fh *fh = fh_alloc(-1);

	if (fh)
		fh->shared = true;
	return fh;
}

struct hotfs_fh *fh_new(int fd)
{
	struct hotfs_fh *fh = fh_alloc(fd);

	if (!fh)
		return NULL;
	pthread_mutex_lock(&fh_list_lock);
	fh->next = fh_list;
	if (fh_list)
		fh_list->prev = fh;
	fh_list = fh;
	pthread_mutex_unlock(&fh_list_lock);
	return fh;
}

void fh_free(struct hotfs_fh *fh)
{
	unsigned i;

	if (!fh)
		return;
	if (!fh->shared) {
		pthread_mutex_lock(&fh_list_lock);
		if (fh->prev)
			fh->prev->next = fh->next;
		else
			fh_list = fh->next;
		if (fh->next)
			fh->next->prev = fh->prev;
		pthread_mutex_unlock(&fh_list_lock);
	}
	if (fh->fd >= 0)
		close(fh->fd);
	for (i = 0; i < FH_STITCHES; i++) {
		free(fh->stitch[i].buf);
		free(fh->stitch[i].map);
	}
	pthread_mutex_destroy(&fh->m);
	free(fh);
}

/* ------------------------------------------------------------------ */
/* The read path */

struct seg {
	uint64_t start, end;	/* file offsets */
	uint32_t extno;
	bool hit;
	bool promote;
	bool failed;		/* cached read failed: use the source */
	struct hotfs_loc loc;
	struct hotfs_span sp;
	char *bounce;		/* malloc'd: data (unless direct) + tab */
	char *data;		/* where the cached bytes are read to */
	bool direct;		/* data is the reply buffer itself */
	char *tab;		/* sp.tab_len bytes */
	int res_data, res_tab;
};

/* pread all of [off, off + len) unless EOF; returns bytes or -errno. */
static ssize_t pread_full(int fd, char *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done,
				  off + (off_t)done);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * Answer a read from the source.  Not spliced: libfuse would answer a
 * read that fails part way (a bad sector) with the bytes before it, and
 * a short reply is end-of-file to the kernel; a reader must get the
 * source's error instead, as it would reading the source directly.
 */
void cache_reply_source(fuse_req_t req, int fd, size_t size, off_t off)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = pread_full(fd, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void fh_free_all(void)
{
	while (fh_list)
		fh_free(fh_list);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The run a read belongs to: a shared handle starts a new one at every
 * read that does not carry on where its last read ended (seq).
 */
static uint64_t fh_run(struct hotfs_fh *fh, bool seq)
{
	uint64_t run = 0;

	if (fh->shared) {
		pthread_mutex_lock(&fh->m);
		run = seq ? fh->run : ++fh->run;
		pthread_mutex_unlock(&fh->m);
	}
	return run;
}

/*
 * Has this handle touched extno lately?  Remembers it if not.  A shared
 * handle stands for every reader of its inode: what it touched counts
 * again from another run (a reader starting over, another reader) once
 * NOFH_WINDOW_NS have passed; within one run (readahead's requests of one
 * reader) it does not.
 */
static bool fh_seen(struct hotfs_fh *fh, uint32_t extno, uint64_t run)
{
	int64_t now = fh->shared ? mono_ns() : 0;
	unsigned i, slot;

	pthread_mutex_lock(&fh->m);
	for (i = 0; i < FH_RECENT; i++)
		if (fh->recent[i] == extno) {
			if (fh->shared && fh->recent_run[i] != run &&
			    now - fh->recent_ns[i] > NOFH_WINDOW_NS) {
				fh->recent_ns[i] = now;
				fh->recent_run[i] = run;
				break;
			}
			pthread_mutex_unlock(&fh->m);
			return true;
		}
	if (i == FH_RECENT) {
		slot = fh->recent_next++ % FH_RECENT;
		fh->recent[slot] = extno;
		fh->recent_ns[slot] = now;
		fh->recent_run[slot] = run;
	}
	pthread_mutex_unlock(&fh->m);
	return false;
}

_Static_assert(SEQ_REORDER_NS <= NOFH_WINDOW_NS,
	       "a re-read taken for the same run must be one a shared handle "
	       "would not count again anyway (hotfs/seqread.h)");

/* Does the policy count this read?  Updates the handle's state; *seq: the
 * read carries on the handle's run (hotfs/seqread.h). */
static bool counts(struct hotfs_cache *c, struct hotfs_fh *fh, size_t size,
		   off_t off, bool *seq)
{
	uint64_t run;

	*seq = seq_note(&fh->seq, off, size, mono_ns(), &run);
	if (c->seqcutoff && run > c->seqcutoff) {
		stats_add(&c->stats, STAT_NP_SEQCUTOFF, 1);
		return false;
	}
	return true;
}

static void enqueue(struct hotfs_cache *c, struct hotfs_inode *in,
		    const struct hotfs_key *k, uint32_t extno,
		    const struct hotfs_stamp *stamp, uint64_t gen, char *buf,
		    uint32_t len)
{
	struct pr_item it = { 0 };

	it.in = in;
	it.key = *k;
	it.extno = extno;
	it.stamp = *stamp;
	it.gen = gen;
	it.h = pol_hash(k, extno);
	it.buf = buf;
	it.len = len;
	ino_hold(c->it, in);
	pr_enqueue(c->pr, &it);
}

static void stitch_clear(struct fh_stitch *sx)
{
	free(sx->buf);
	free(sx->map);
	sx->buf = NULL;
	sx->map = NULL;
}

/* Give up an unfinished extent: promote it by reading the source. */
static void __stitch_flush(struct hotfs_cache *c, struct hotfs_inode *in,
			   struct fh_stitch *sx)
{
	struct hotfs_key k;

	if (!sx->buf)
		return;
	stitch_clear(sx);
	cache_key(c, in->dev, in->ino, &k);
	enqueue(c, in, &k, sx->extno, &sx->stamp, sx->gen, NULL, 0);
}

void cache_release(struct hotfs_cache *c, struct hotfs_inode *in,
		   struct hotfs_fh *fh)
{
	unsigned i;

	if (!c)
		return;
	pthread_mutex_lock(&fh->m);
	for (i = 0; i < FH_STITCHES; i++)
		__stitch_flush(c, in, &fh->stitch[i]);
	pthread_mutex_unlock(&fh->m);
}


static bool same_stamp(const struct hotfs_stamp *a,
		       const struct hotfs_stamp *b)
{
	return a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* The slot assembling extno (made if new), or NULL. */
static struct fh_stitch *__stitch_get(struct hotfs_cache *c,
				      struct hotfs_inode *in,
				      struct hotfs_fh *fh, uint32_t extno,
				      uint32_t len,
				      const struct hotfs_stamp *stamp,
				      uint64_t gen)
{
	struct fh_stitch *sx, *victim = NULL;
	unsigned i;

	for (i = 0; i < FH_STITCHES; i++) {
		sx = &fh->stitch[i];
		if (sx->buf && sx->extno == extno) {
			if (sx->gen == gen && same_stamp(&sx->stamp, stamp))
				return sx;
			stitch_clear(sx);	/* the file changed: restart */
			victim = sx;
			break;
		}
		if (!victim || !sx->buf ||
		    (victim->buf && sx->age < victim->age))
			victim = sx;
	}
	__stitch_flush(c, in, victim);
	sx = victim;
	sx->nblk = (len + FH_BLK - 1) / FH_BLK;
	sx->buf = malloc(len);
	sx->map = calloc((sx->nblk + 63) / 64, sizeof(uint64_t));
	if (!sx->buf || !sx->map) {
		stitch_clear(sx);
		return NULL;
	}
	sx->extno = extno;
	sx->len = len;
	sx->have = 0;
	sx->stamp = *stamp;
	sx->gen = gen;
	sx->age = ++fh->stitch_age;
	return sx;
}

/* Add [from, to) (extent offsets) of data; true when the extent is whole. */
static bool stitch_add(struct fh_stitch *sx, uint32_t from, uint32_t to,
		       const char *data)
{
	uint32_t b;

	/* only whole blocks (the last one may be short: the file's end) */
	from = (from + FH_BLK - 1) / FH_BLK * FH_BLK;
	if (to != sx->len)
		to = to / FH_BLK * FH_BLK;
	for (b = from / FH_BLK; b * FH_BLK < to; b++) {
		uint32_t o = b * FH_BLK;
		uint32_t n = to - o < FH_BLK ? to - o : FH_BLK;

		if (sx->map[b / 64] & (1ull << (b % 64)))
			continue;
		memcpy(sx->buf + o, data + (o - from) + 0, n);
		sx->map[b / 64] |= 1ull << (b % 64);
		sx->have++;
	}
	return sx->have == sx->nblk;
}

/*
 * After a read: queue the extents that reached the threshold.  With the
 * read's bytes at hand (data != NULL, for [data_off, data_off+data_len)),
 * an extent the read covered is queued with its bytes, and one it covered
 * in part is assembled over the handle's following reads.
 */
static void queue_promotions(struct hotfs_cache *c, struct hotfs_inode *in,
			     struct hotfs_fh *fh, const struct hotfs_key *k,
			     const struct hotfs_stamp *stamp, uint64_t gen,
			     struct seg *s, unsigned n, const char *data,
			     uint64_t data_off, uint64_t data_len)
{
	unsigned i;

	pthread_mutex_lock(&fh->m);
	for (i = 0; i < n; i++) {
		struct seg *g = &s[i];
		uint64_t ext_start = (uint64_t)g->extno << c->ext_shift;
		uint32_t len = ext_len(c, g->extno, stamp->size);
		uint64_t end = data ? data_off + data_len : 0;
		struct fh_stitch *sx;
		uint32_t from, to;

		if (end > g->end)
			end = g->end;
		if (!g->promote || g->hit || !len)
			continue;
		if (!data || end <= g->start) {
			enqueue(c, in, k, g->extno, stamp, gen, NULL, 0);
			continue;
		}
		if (g->start == ext_start && end >= ext_start + len) {
			char *b = malloc(len);

			if (b)
				memcpy(b, data + (ext_start - data_off), len);
			enqueue(c, in, k, g->extno, stamp, gen, b,
				b ? len : 0);
			continue;
		}
		sx = __stitch_get(c, in, fh, g->extno, len, stamp, gen);
		if (!sx) {
			enqueue(c, in, k, g->extno, stamp, gen, NULL, 0);
			continue;
		}
		from = (uint32_t)(g->start - ext_start);
		to = (uint32_t)(end - ext_start);
		/* data + (g->start - data_off) holds extent offset "from";
		 * stitch_add copies whole blocks from the aligned start */
		{
			uint32_t afrom = (from + FH_BLK - 1) / FH_BLK * FH_BLK;

			if (afrom < to && stitch_add(sx, afrom, to,
					data + (ext_start + afrom - data_off))) {
				enqueue(c, in, k, sx->extno, &sx->stamp,
					sx->gen, sx->buf, sx->len);
				free(sx->map);
				sx->buf = NULL;
				sx->map = NULL;
			}
		}
	}
	pthread_mutex_unlock(&fh->m);
}

/*
 * Read every segment at once on this thread's ring.  Sets res_data and
 * res_tab (-ECANCELED for what was not run); never fails as a whole.
 */
static void read_uring(int src, struct seg *s, unsigned n,
		       char *buf, uint64_t off, int data_fd)
{
	struct io_uring_cqe *cqe;
	struct io_uring *ring;
	unsigned i, nsub = 0, done = 0, submitted = 0;
	bool fixed = false;
	int r;

	for (i = 0; i < n; i++)
		s[i].res_data = s[i].res_tab = -ECANCELED;
	ring = ur_ring(data_fd, &fixed);
	if (!ring)
		return;
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe;
		int fd = s[i].hit ? (fixed ? 0 : s[i].loc.fd) : src;
		bool fx = s[i].hit && fixed;

		if (nsub + 2 > UR_DEPTH)
			break;
		sqe = io_uring_get_sqe(ring);
		if (s[i].hit)
			io_uring_prep_read(sqe, fd, s[i].data,
					   s[i].sp.data_len, s[i].sp.data_off);
		else
			io_uring_prep_read(sqe, fd, buf + (s[i].start - off),
					   (unsigned)(s[i].end - s[i].start),
					   s[i].start);
		if (fx)
			sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, (uint64_t)i << 1);
		nsub++;
		if (s[i].hit && s[i].sp.tab_len) {
			sqe = io_uring_get_sqe(ring);
			io_uring_prep_read(sqe, fd, s[i].tab, s[i].sp.tab_len,
					   s[i].sp.tab_off);
			if (fx)
				sqe->flags |= IOSQE_FIXED_FILE;
			io_uring_sqe_set_data64(sqe, ((uint64_t)i << 1) | 1);
			nsub++;
		}
	}
	while (submitted < nsub) {
		r = io_uring_submit(ring);
		if (r > 0) {
			submitted += (unsigned)r;
			continue;
		}
		if (r == -EINTR || r == -EAGAIN || r == -EBUSY)
			continue;
		break;
	}
	while (done < submitted) {
		uint64_t d;

		r = io_uring_wait_cqe(ring, &cqe);
		if (r == -EINTR)
			continue;
		if (r < 0)
			break;
		d = io_uring_cqe_get_data64(cqe);
		if (d & 1)
			s[d >> 1].res_tab = cqe->res;
		else
			s[d >> 1].res_data = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		done++;
	}
	if (submitted < nsub || done < submitted) {
		/* a broken ring: forget it, the segments go the slow way */
		hotfs_log(LOG_WARNING, "io_uring failed, resetting the ring\n");
		ur_discard();
	}
}

/* Serve a cached segment from its bounce buffer, if it verifies. */
static bool finish_hit(struct hotfs_cache *c, struct seg *g, char *dst)
{
	uint64_t ext_base = (uint64_t)g->extno << c->ext_shift;
	int r;

	if (g->res_data < 0 || (g->sp.tab_len && g->res_tab < 0)) {
		int e = g->res_data < 0 ? g->res_data : g->res_tab;

		if (e != -ECANCELED) {
			stats_add(&c->stats, STAT_CACHE_IO_ERR, 1);
			st_report_io_error(c->st, &g->loc, e);
		}
		return false;
	}
	/*
	 * A truncated data file: the bytes past its end are zeros, which
	 * fail the checksum and drop the entry (if they pass, zeros were
	 * what was cached), so that the extent is not looked up again.
	 */
	if ((uint32_t)g->res_data < g->sp.data_len)
		memset(g->data + g->res_data, 0,
		       g->sp.data_len - (uint32_t)g->res_data);
	if (g->sp.tab_len && (uint32_t)g->res_tab < g->sp.tab_len)
		memset(g->tab + g->res_tab, 0,
		       g->sp.tab_len - (uint32_t)g->res_tab);
	r = st_verify(c->st, &g->loc, g->sp.ext_off, g->data, g->sp.data_len,
		      g->sp.tab_len ? g->tab : NULL);
	if (r < 0) {
		if (r != -ESTALE)
			stats_add(&c->stats, STAT_CSUM_FAIL, 1);
		return false;
	}
	if (!g->direct)
		memcpy(dst, g->data + (g->start - ext_base - g->sp.ext_off),
		       g->end - g->start);
	return true;
}

/* At most this many extents in one request for the read-ahead path. */
#define RA_SEGS 8

/* Is this read served by whole-extent read-ahead (readahead.h)?  Large
 * reads, and reads of a handle reading on sequentially for an extent;
 * small random reads read blocks, not extents. */
static bool ra_wanted(const struct hotfs_cache *c, struct hotfs_fh *fh,
		      size_t size, bool seq, unsigned n)
{
	if (!c->ra || n > RA_SEGS)
		return false;
	return size >= c->extent / 2 ||
	       (seq && seq_run(&fh->seq) >= c->extent);
}

/* Start reading the cached extents after last, up to RA_AHEAD bytes on,
 * stopping at the first that is not cached; those this run of the handle
 * has started already are not looked up again. */
static void prefetch_ahead(struct hotfs_cache *c, struct hotfs_fh *fh,
			   const struct hotfs_key *k,
			   const struct hotfs_stamp *stamp, uint32_t last)
{
	uint64_t x, ahead = RA_AHEAD >> c->ext_shift;

	if (!ahead)
		ahead = 1;
	for (x = seq_prefetch_from(&fh->seq, last);
	     x <= (uint64_t)last + ahead; x++) {
		struct hotfs_loc loc;

		if (x >= ST_EXT_LIMIT || x << c->ext_shift >= stamp->size ||
		    st_lookup(c->st, k, (uint32_t)x, stamp, &loc) < 0 ||
		    !ra_prefetch(c->ra, &loc))
			break;
	}
	seq_prefetched(&fh->seq, x);
}

/*
 * Serve a read whose n segments are all cached from whole extents read
 * with O_DIRECT.  false: nothing was sent, take the ordinary path; a
 * segment found stale or corrupt on the way is marked not cached.
 */
static bool ra_serve(fuse_req_t req, struct hotfs_cache *c,
		     struct hotfs_fh *fh, const struct hotfs_key *k,
		     const struct hotfs_stamp *stamp, struct seg *s, unsigned n,
		     bool seq)
{
	struct ra_ref ref[RA_SEGS];
	struct iovec iov[RA_SEGS];
	uint64_t total = 0;
	unsigned i, got;
	int r = 0;

	for (i = 0; i < n; i++) {
		uint64_t base = (uint64_t)s[i].extno << c->ext_shift;

		if (!ra_eligible(c->ra, &s[i].loc) ||
		    s[i].end - base > s[i].loc.len)
			return false;
	}
	/* everything this read and the next ones need, in flight at once */
	for (i = 0; i < n; i++)
		ra_prefetch(c->ra, &s[i].loc);
	if (seq)
		prefetch_ahead(c, fh, k, stamp, s[n - 1].extno);
	for (got = 0; got < n; got++) {
		struct seg *g = &s[got];
		uint64_t base = (uint64_t)g->extno << c->ext_shift;

		r = ra_get(c->ra, &g->loc, &ref[got]);
		if (r < 0)
			break;
		iov[got].iov_base = (char *)ref[got].data + (g->start - base);
		iov[got].iov_len = g->end - g->start;
		total += g->end - g->start;
	}
	if (got < n) {
		if (r == -EBADMSG)
			stats_add(&c->stats, STAT_CSUM_FAIL, 1);
		if (r == -EBADMSG || r == -ESTALE)
			s[got].hit = false;
		for (i = 0; i < got; i++)
			ra_put(c->ra, &ref[i], false);
		return false;
	}
	stats_add(&c->stats, STAT_HIT_REQS, 1);
	stats_add(&c->stats, STAT_HIT_BYTES, total);
	stats_add(&c->stats, STAT_READ_BYTES, total);
	fuse_reply_iov(req, iov, (int)n);
	for (i = 0; i < n; i++) {
		uint64_t base = (uint64_t)s[i].extno << c->ext_shift;

		ra_put(c->ra, &ref[i], s[i].end == base + s[i].loc.len);
	}
	return true;
}

void cache_read(fuse_req_t req, struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_fh *fh, int src, size_t size, off_t off)
{
	struct hotfs_stamp stamp;
	struct hotfs_key k;
	struct stat st;
	struct seg *s = NULL;
	char *buf = NULL;
	uint64_t end, total, gen, pos, run;
	uint32_t e0, e1;
	unsigned n, i, hits = 0, promos = 0;
	bool count, seq, insertable, busy, racy, reuse = false;
	int data_fd = -1;

	stats_add(&c->stats, STAT_READ_REQS, 1);
	if (size == 0 || fstat(src, &st) == -1 ||
	    (uint64_t)off >= (uint64_t)st.st_size)
		goto passthrough;
	end = (uint64_t)off + size;
	if (end > (uint64_t)st.st_size)
		end = (uint64_t)st.st_size;
	/* extent numbers are 32-bit: the source alone serves reads there */
	if ((end - 1) >> c->ext_shift >= ST_EXT_LIMIT)
		goto passthrough;
	cache_stamp(&st, &stamp);
	cache_key(c, in->dev, in->ino, &k);
	/* taken before the read: bytes read from the source now may be a
	 * version that a change in the same clock tick replaces under the
	 * same stamp; they are not promoted until the tick is over */
	racy = srcprobe_racy_now(stamp.mtime_ns, stamp.ctime_ns);
	e0 = (uint32_t)((uint64_t)off >> c->ext_shift);
	e1 = (uint32_t)((end - 1) >> c->ext_shift);
	pthread_mutex_lock(&in->m);
	gen = in->write_gen;
	/* a write in flight there: the store's copy may predate it, under
	 * a stamp that does not show it yet (same clock tick) */
	busy = in->wr_inflight && e0 <= in->wr_hi && e1 >= in->wr_lo;
	pthread_mutex_unlock(&in->m);
	if (busy)
		goto passthrough;

	n = e1 - e0 + 1;
	s = calloc(n, sizeof(*s));
	if (!s)
		goto passthrough;
	count = counts(c, fh, size, off, &seq);
	run = fh_run(fh, seq);
	insertable = st_state(c->st) == ST_OK;
	for (i = 0; i < n; i++) {
		struct seg *g = &s[i];
		uint64_t h;
		unsigned cnt = 0;

		g->extno = e0 + i;
		g->start = i ? (uint64_t)g->extno << c->ext_shift :
			   (uint64_t)off;
		g->end = ((uint64_t)g->extno + 1) << c->ext_shift;
		if (g->end > end)
			g->end = end;
		h = pol_hash(&k, g->extno);
		if (count && !fh_seen(fh, g->extno, run)) {
			cnt = pol_access(c->pol, h);
			stats_add(&c->stats, STAT_ACCESSES, 1);
		}
		if (st_lookup(c->st, &k, g->extno, &stamp, &g->loc) == 0) {
			g->hit = true;
			hits++;
			continue;
		}
		if (cnt && !pol_promote(c->pol, cnt))
			stats_add(&c->stats, STAT_NP_THRESHOLD, 1);
		if (!cnt && count)
			cnt = pol_estimate(c->pol, h);	/* same extent again */
		if (!cnt || !pol_promote(c->pol, cnt))
			continue;
		if (!insertable) {
			/* the store would refuse it after the promoter read
			 * the source again: a degraded store costs no I/O */
			stats_add(&c->stats, STAT_NP_STORE, 1);
			continue;
		}
		if (racy) {
			stats_add(&c->stats, STAT_NP_RACY, 1);
			continue;
		}
		g->promote = true;
		promos++;
		reuse = true;	/* keep the bytes: no second read */
	}
	total = end - (uint64_t)off;
	if (hits == n && ra_wanted(c, fh, size, seq, n)) {
		if (ra_serve(req, c, fh, &k, &stamp, s, n, seq)) {
			free(s);
			return;
		}
		for (hits = 0, i = 0; i < n; i++)
			hits += s[i].hit;
	}
	/* this read may carry on an extent the handle is assembling */

	if (!hits && !reuse) {
		stats_add(&c->stats, STAT_MISS_REQS, 1);
		stats_add(&c->stats, STAT_MISS_BYTES, total);
		stats_add(&c->stats, STAT_READ_BYTES, total);
		/* before the reply: it may be the kernel's last reference
		 * to the handle and the inode */
		if (promos)
			queue_promotions(c, in, fh, &k, &stamp, gen, s, n,
					 NULL, 0, 0);
		cache_reply_source(req, src, size, off);
		free(s);
		return;
	}

	buf = malloc(total);
	if (!buf)
		goto passthrough_free;
	for (i = 0; i < n; i++) {
		struct seg *g = &s[i];
		uint64_t ext_base = (uint64_t)g->extno << c->ext_shift;

		if (!g->hit)
			continue;
		if (st_loc_span(&g->loc, (uint32_t)(g->start - ext_base),
				(uint32_t)(g->end - g->start), &g->sp) < 0) {
			g->hit = false;
			hits--;
			continue;
		}
		/* block-aligned (the kernel's reads are): straight into the
		 * reply, no copy */
		g->direct = g->sp.ext_off == g->start - ext_base &&
			    g->sp.data_len == g->end - g->start;
		g->bounce = malloc((g->direct ? 0 : g->sp.data_len) +
				   g->sp.tab_len + 1);
		if (!g->bounce) {
			g->hit = false;
			hits--;
			continue;
		}
		g->data = g->direct ? buf + (g->start - (uint64_t)off) :
			  g->bounce;
		g->tab = g->bounce + (g->direct ? 0 : g->sp.data_len);
		data_fd = g->loc.fd;
	}
	read_uring(src, s, n, buf, (uint64_t)off, data_fd);

	/* cached segments: verify; uncached or failed: from the source */
	pos = total;
	for (i = 0; i < n; i++) {
		struct seg *g = &s[i];
		char *dst = buf + (g->start - (uint64_t)off);
		size_t want = g->end - g->start;
		ssize_t got;

		if (g->hit && finish_hit(c, g, dst)) {
			stats_add(&c->stats, STAT_HIT_BYTES, want);
			continue;
		}
		if (g->hit)
			hits--;
		if (!g->hit && g->res_data >= 0 && (size_t)g->res_data == want) {
			got = g->res_data;
		} else if (!g->hit && g->res_data >= 0) {	/* short: finish */
			got = pread_full(src, dst + g->res_data,
					 want - (size_t)g->res_data,
					 (off_t)g->start + g->res_data);
			if (got >= 0)
				got += g->res_data;
		} else {
			got = pread_full(src, dst, want, (off_t)g->start);
		}
		/* not the bytes before the failure: a short reply is EOF to
		 * the kernel, and a reader would see the file end there */
		if (got < 0) {
			fuse_reply_err(req, (int)-got);
			goto out;
		}
		stats_add(&c->stats, STAT_MISS_BYTES, (uint64_t)got);
		if ((size_t)got < want) {	/* EOF moved: stop here */
			pos = g->start - (uint64_t)off + (uint64_t)got;
			break;
		}
	}
	stats_add(&c->stats, hits == n ? STAT_HIT_REQS :
			     hits ? STAT_PARTIAL_REQS : STAT_MISS_REQS, 1);
	stats_add(&c->stats, STAT_READ_BYTES, pos);
	queue_promotions(c, in, fh, &k, &stamp, gen, s, n, buf,
			 (uint64_t)off, pos);
	fuse_reply_buf(req, buf, pos);
out:
	for (i = 0; i < n; i++)
		free(s[i].bounce);
	free(s);
	free(buf);
	return;
passthrough_free:
	free(s);
passthrough:
	stats_add(&c->stats, STAT_MISS_REQS, 1);
	cache_reply_source(req, src, size, off);
}

/* ------------------------------------------------------------------ */
/* hotfsctl's requests */

/* Open the source file for reading, and its stamp. */
static int open_source(struct hotfs_cache *c, struct hotfs_inode *in,
		       struct hotfs_stamp *stamp)
{
	struct stat st;
	char pn[32];
	int fd;

	fd = ino_fd(c->it, in);
	if (fd < 0)
		return -errno;
	snprintf(pn, sizeof(pn), "%d", fd);
	fd = openat(c->proc_self_fd, pn, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (fd == -1 && errno == EPERM)
		fd = openat(c->proc_self_fd, pn, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		int r = -errno;

		ino_fd_put(in);
		return r;
	}
	ino_fd_put(in);
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		int r = S_ISREG(st.st_mode) ? -errno : -EINVAL;

		close(fd);
		return r;
	}
	cache_stamp(&st, stamp);
	return fd;
}

static void fill_info(struct hotfs_cache *c, const struct hotfs_key *k,
		      const struct hotfs_stamp *stamp, struct hotfs_ioc *io)
{
	struct hotfs_loc loc;
	uint32_t e, e0, e1;

	io->bytes = io->extents = 0;
	io->size = stamp->size;
	io->extent = c->extent;
	ctl_ioc_extents(io, stamp->size, c->ext_shift, &e0, &e1);
	for (e = e0; e < e1; e++)
		if (st_lookup(c->st, k, e, stamp, &loc) == 0) {
			io->extents++;
			io->bytes += loc.len;
		}
	io->flags = pins_has(c->pins, k) ? HOTFS_IOC_F_PINNED : 0;
}

/* The file's key and current stamp, from the source. */
static int key_and_stamp(struct hotfs_cache *c, struct hotfs_inode *in,
			 struct hotfs_key *k, struct hotfs_stamp *stamp)
{
	int fd = open_source(c, in, stamp);

	if (fd < 0)
		return fd;
	close(fd);
	cache_key(c, in->dev, in->ino, k);
	return 0;
}

int cache_info(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io)
{
	struct hotfs_stamp stamp;
	struct hotfs_key k;
	int r = key_and_stamp(c, in, &k, &stamp);

	if (r < 0)
		return r;
	fill_info(c, &k, &stamp, io);
	return 0;
}

int cache_warm(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io)
{
	struct hotfs_stamp stamp, now;
	struct hotfs_loc loc;
	struct hotfs_key k;
	uint32_t e, e0, e1;
	uint64_t gen;
	char *buf;
	int fd, r = 0;

	fd = open_source(c, in, &stamp);
	if (fd < 0)
		return fd;
	buf = malloc(c->extent);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	cache_key(c, in->dev, in->ino, &k);
	ctl_ioc_extents(io, stamp.size, c->ext_shift, &e0, &e1);
	io->done = 0;
	/* changed within a clock tick: nothing to cache yet (srcprobe.h) */
	if (srcprobe_racy_now(stamp.mtime_ns, stamp.ctime_ns)) {
		stats_add(&c->stats, STAT_NP_RACY, 1);
		e1 = e0;
	}
	for (e = e0; e < e1 && !r; e++) {
		uint32_t len = ext_len(c, e, stamp.size);
		ssize_t n;
		struct stat st;

		if (st_lookup(c->st, &k, e, &stamp, &loc) == 0)
			continue;
		pthread_mutex_lock(&in->m);
		gen = in->write_gen;
		pthread_mutex_unlock(&in->m);
		n = pread_full(fd, buf, len, (off_t)e << c->ext_shift);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (fstat(fd, &st) == -1) {
			r = -errno;
			break;
		}
		cache_stamp(&st, &now);
		if ((uint32_t)n != len || !same_stamp(&now, &stamp)) {
			r = -EAGAIN;	/* changed while warming: retry */
			break;
		}
		pthread_mutex_lock(&in->m);
		if (in->write_gen != gen) {
			pthread_mutex_unlock(&in->m);
			r = -EAGAIN;
			break;
		}
		r = st_insert(c->st, &k, e, &stamp, buf, len);
		if (r >= 0 && in->cached_extents_hint <= e)
			in->cached_extents_hint = (uint64_t)e + 1;
		pthread_mutex_unlock(&in->m);
		if (r < 0) {
			stats_add(&c->stats, STAT_NP_STORE, 1);
			break;
		}
		r = 0;
		io->done += len;
		stats_add(&c->stats, STAT_PROMOTIONS, 1);
		stats_add(&c->stats, STAT_PROMO_BYTES, len);
		stats_add(&c->stats, STAT_PROMO_SRC_READS, 1);
	}
	free(buf);
	close(fd);
	fill_info(c, &k, &stamp, io);
	return r;
}

int cache_evict(struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_ioc *io)
{
	struct hotfs_stamp stamp;
	struct hotfs_key k;
	int r = key_and_stamp(c, in, &k, &stamp);

	if (r < 0)
		return r;
	fill_info(c, &k, &stamp, io);
	io->done = io->bytes;
	st_invalidate(c->st, &k, 0, 0, ST_INVAL_USER);
	fill_info(c, &k, &stamp, io);
	return 0;
}

int cache_pin(struct hotfs_cache *c, struct hotfs_inode *in, bool on)
{
	struct hotfs_key k;

	cache_key(c, in->dev, in->ino, &k);
	return pins_set(c->pins, &k, on);
}
