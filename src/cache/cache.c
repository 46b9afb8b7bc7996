// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cache's life cycle (see include/hotfs/cache.h): opening the store,
 * the policy, the pins and the promoter for a mount, starting their
 * threads, saving the policy's access counts, and closing it all.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/cache.h"
#include "hotfs/filecopy.h"
#include "hotfs/fileio.h"
#include "hotfs/log.h"
#include "hotfs/policy_state.h"
#include "hotfs/promote.h"
#include "hotfs/readahead.h"
#include "hotfs/srcprobe.h"
#include "hotfs/uring.h"

static unsigned ilog2u(uint32_t v)
{
	unsigned r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static bool store_exists(int dirfd)
{
	return faccessat(dirfd, "superblock", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool keep_extent(void *arg, const struct hotfs_extent_info *x)
{
	struct hotfs_cache *c = arg;

	/* it goes, and recycling declined none (all were in use): the one
	 * to beat from now on */
	if (x->no_room) {
		pol_let_go(c->pol, pol_hash(&x->key, x->extno));
		return false;
	}
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

/* "...; what to do", where the store's message does not say it. */
static void add_advice(char *err, size_t errlen, int r)
{
	const char *a = st_advice(r);
	size_t n = strlen(err);

	if (a && n < errlen)
		snprintf(err + n, errlen - n, "; %s", a);
}

/*
 * The store's capacity: cachesize= (bytes or a share of the cachedir's
 * filesystem); not given, as recorded in the store (0), or 90% of the
 * free space for a new one.
 */
static int capacity(const struct hotfs_opts *o, int dirfd, uint64_t *cap,
		    char *err, size_t errlen)
{
	int r = 0;

	*cap = 0;
	if (o->cachesize)
		*cap = o->cachesize;
	else if (o->cachesize_pct)
		r = st_size_from_fs(o->cachedir, o->cachesize_pct, false, cap);
	else if (o->reset || !store_exists(dirfd))
		r = st_size_from_fs(o->cachedir, 90, true, cap);
	if (r < 0)
		snprintf(err, errlen, "cachedir '%s': %s", o->cachedir,
			 strerror(-r));
	return r;
}

/* A mount's cache, its fields from the options (dirfd: the cachedir's,
 * st: the source root's); NULL without memory. */
static struct hotfs_cache *cache_new(const struct hotfs_opts *o, int dirfd,
				     const struct stat *st)
{
	struct hotfs_cache *c = calloc(1, sizeof(*c));
	uint32_t salt;

	if (!c)
		return NULL;
	c->dirfd = dirfd;
	c->extent = o->extent;
	c->ext_shift = ilog2u(o->extent);
	c->root_dev = st->st_dev;
	if (getrandom(&salt, sizeof(salt), 0) != sizeof(salt))
		salt = (uint32_t)time(NULL) ^ (uint32_t)getpid();
	c->run_salt = salt ? salt : 1;
	c->seqcutoff = o->seqcutoff;
	c->writemode = o->writemode;
	c->proc_self_fd = -1;
	clock_gettime(CLOCK_MONOTONIC, &c->stats.started);
	c->stats.reset = c->stats.started;
	return c;
}

/* The source's identity into *ident: its path, its filesystem, its root;
 * its length, or -1 without memory. */
static int source_ident(const struct hotfs_opts *o, const struct statfs *sfs,
			const struct stat *st, char **ident)
{
	return asprintf(ident, "%s\n%08x%08x\n%llu", o->source,
			(unsigned)sfs->f_fsid.__val[0],
			(unsigned)sfs->f_fsid.__val[1],
			(unsigned long long)st->st_ino);
}

/* The store, into c->st: "umount; mount" again may find the old daemon
 * still exiting and holding the cachedir's lock for a moment. */
static int store_open(struct hotfs_cache *c, const struct hotfs_opts *o,
		      const struct hotfs_store_params *sp, char *err,
		      size_t errlen)
{
	int r, tries;

	r = st_open_at(c->dirfd, o->cachedir, sp, &c->st, err, errlen);
	for (tries = 0; r == -EBUSY && tries < 100; tries++) {
		usleep(50000);
		r = st_open_at(c->dirfd, o->cachedir, sp, &c->st, err,
			       errlen);
	}
	if (r < 0)
		return r;
	if (tries)
		hotfs_log(LOG_NOTICE, "cachedir '%s': waited %d ms for the "
			  "previous daemon to let it go\n", o->cachedir,
			  tries * 50);
	return 0;
}

/* The policy told the store's size in extents: counts age over about 8
 * cache-fulls of accesses. */
static void size_policy(struct hotfs_cache *c)
{
	struct hotfs_store_stats ss;

	st_get_stats(c->st, &ss);
	pol_set_cache(c->pol, ss.capacity >> c->ext_shift);
}

/* A pinned file keeps its records beside its copy. */
static bool pinned(void *arg, const struct hotfs_key *key)
{
	struct hotfs_cache *c = arg;

	return pins_has(c->pins, key);
}

/* The file grain for passthrough (hotfs/filecopy.h): without it the
 * mount goes on with passthrough off, said. */
static void open_copies(struct hotfs_cache *c, const struct hotfs_opts *o,
			bool forget)
{
	struct hotfs_store_stats ss;
	struct fc_params fp = { 0 };
	char why[256];

	st_get_stats(c->st, &ss);
	fp.dirfd = c->dirfd;
	fp.st = c->st;
	fp.extent = c->extent;
	fp.max_bytes = ss.capacity / 2;
	fp.min_size = o->passthrough_min ? o->passthrough_min : 1;
	fp.scrub_rate = o->scrub_rate;
	fp.scrub_interval = HOTFS_SCRUB_INTERVAL_S;
	fp.forget = forget;
	fp.keep_records = pinned;
	fp.keep_arg = c;
	if (fc_open(&c->fc, &fp, why, sizeof(why)) < 0) {
		hotfs_log(LOG_WARNING, "cachedir: %s: passthrough off\n",
			  why);
		c->fc = NULL;	/* FUSE_INIT says so */
	}
}

int cache_open(struct hotfs_cache **out, const struct hotfs_opts *o,
	       int root_fd, char *err, size_t errlen)
{
	struct hotfs_store_params sp = { 0 };
	struct pol_params pp = { 0 };
	struct hotfs_cache *c;
	struct statfs sfs;
	struct stat st;
	char *ident = NULL, why[PATH_MAX + 160];
	int dirfd, len, r;

	if (fstat(root_fd, &st) == -1 || fstatfs(root_fd, &sfs) == -1) {
		snprintf(err, errlen, "source '%s': %s", o->source,
			 strerror(errno));
		return -EIO;
	}
	/* its parent exists (opt_validate); umask 022 leaves 0700 alone.
	 * Everything of the cache is opened relative to this descriptor,
	 * following no symlink (hotfs/fileio.h) */
	dirfd = dir_open_owned(o->cachedir, 0700, why, sizeof(why));
	if (dirfd < 0) {
		snprintf(err, errlen, "cachedir '%s': %s", o->cachedir, why);
		add_advice(err, errlen, dirfd);
		return dirfd;
	}
	c = cache_new(o, dirfd, &st);
	if (!c) {
		close(dirfd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	len = source_ident(o, &sfs, &st, &ident);
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
	pp.threshold = (unsigned)o->threshold;
	r = pol_new(&pp, &c->pol);
	if (r < 0) {
		snprintf(err, errlen, "policy: %s", strerror(-r));
		goto bad_free;
	}
	/* region recycling asks the policy which extents to copy forward */
	sp.keep = keep_extent;
	sp.keep_arg = c;
	r = capacity(o, c->dirfd, &sp.capacity, err, errlen);
	if (r < 0)
		goto bad_pol;
	r = store_open(c, o, &sp, err, errlen);
	if (r < 0)
		goto bad_pol;
	size_policy(c);
	load_counts(c, o, ident, (size_t)len);
	r = pins_open(&c->pins, c->dirfd, o->reset || !hotfs_src.ids_kept);
	if (r < 0) {
		snprintf(err, errlen, "cachedir '%s': pins: %s", o->cachedir,
			 strerror(-r));
		goto bad_store;
	}
	if (o->passthrough_on)
		open_copies(c, o, sp.forget || o->reset);
	else
		fc_purge(c->dirfd);
	budget_init(&c->budget, o->write_budget);
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
	st_close(c->st);
bad_pol:
	pol_free(c->pol);
bad_free:
	close(c->dirfd);
	free(ident);
	free(c);
	add_advice(err, errlen, r);
	return r;
}

bool cache_usable(struct hotfs_cache *c, char *err, size_t errlen)
{
	struct hotfs_store_stats ss;

	st_get_stats(c->st, &ss);
	if (ss.state == ST_OK)
		return true;
	snprintf(err, errlen, "%s; cache is %s", ss.reason,
		 st_state_name(ss.state));
	return false;
}

int cache_start(struct hotfs_cache *c, struct hotfs_itable *it,
		int proc_self_fd)
{
	char why[128];
	int r;

	c->it = it;
	c->proc_self_fd = proc_self_fd;
	/* the engine of cached reads, chosen once (ur_probe) */
	c->uring = ur_probe(why, sizeof(why));
	if (!c->uring)
		hotfs_log(LOG_WARNING, "cachedir: cached reads with pread: "
			  "%s\n", why);
	/* after daemonizing: it has a thread */
	r = ra_new(&c->ra, c->st, c->extent, 0, why, sizeof(why));
	if (r < 0)
		hotfs_log(LOG_INFO, "cachedir: no read-ahead of cached "
			  "extents (%s)\n", why);
	r = pr_start(c->pr);
	if (r == 0 && c->fc)
		r = fc_start(c->fc);
	return r;
}

void cache_close(struct hotfs_cache *c)
{
	if (!c)
		return;
	pr_free(c->pr);		/* stops the thread, drops the queue */
	fc_close(c->fc);	/* stops the copier */
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
