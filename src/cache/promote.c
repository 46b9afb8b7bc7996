// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Promotion: copy extents the policy found hot into the cache store, in a
 * background thread, so that the read that made an extent hot is never
 * delayed.
 *
 * The queue is bounded (PR_QUEUE items) and deduplicated by extent hash:
 * an extent already queued is not queued twice, and when the queue is
 * full new candidates are dropped (counted as "queue full"; they will be
 * counted again and retried on a later access).  Items carry the reader's
 * copy of the extent when its read covered the whole extent; otherwise
 * the thread reads the source itself.  The copies queued are bounded too
 * (PR_BUF_MAX bytes; a candidate whose copy does not fit is dropped as
 * "queue full"): behind items that wait for promote_rate, a busy mount
 * would otherwise keep up to PR_QUEUE extents in RAM (1 GiB with 256K
 * extents), and the daemon's RSS would follow the backlog.
 * promote_rate= bytes/s caps those second reads of the source with a
 * token bucket (like dm-cache's migration_threshold), so warming never
 * starves foreground I/O on a disk that has few IOPS to spare.  Admission
 * (TinyLFU, once the store is full) is decided before such a read, not
 * after it: a rejected extent costs the slow disk nothing.
 *
 * An extent is inserted only if the inode's write generation is the one
 * seen when it was queued (cache_insert: insert if still current) and
 * the source's stamp is the one it was read under: a write or a change
 * racing the promotion makes it a no-op rather than caching old data.
 *
 * The promoter calls nothing of the cache's own files (hotfs/promote.h);
 * the daemon's periodic work (the store's group commit, the inode sweep,
 * saving the access counts) is tick.c's.  Lock: pr->lock protects the
 * queue and the set; no other lock is held with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hotfs/cache.h"
#include "hotfs/cache_insert.h"
#include "hotfs/clock.h"
#include "hotfs/fileio.h"
#include "hotfs/log.h"
#include "hotfs/promote.h"

#define PR_QUEUE	4096u		/* power of two */
#define PR_BUF_MAX	(64u << 20)	/* bytes of readers' copies queued */
#define PR_SET		(PR_QUEUE * 2)
#define PR_RATE_POLL_MS	100		/* pr_set_rate applies within this */

struct hotfs_promoter {
	struct hotfs_cache *c;
	_Atomic uint64_t rate;		/* bytes/s, 0 = unlimited; may change
					 * at any time (pr_set_rate) */
	pthread_t thread;
	bool started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;			/* protected by lock */
	struct pr_item q[PR_QUEUE];	/* protected by lock */
	unsigned head, tail;		/* protected by lock */
	unsigned working;		/* items taken, not done; by lock */
	uint64_t buf_bytes;		/* in queued items' copies, by lock */
	uint64_t set[PR_SET];		/* queued hashes, 0 = empty */
};

/* Open addressing with linear probing; h is never 0 here. */
static bool set_add(struct hotfs_promoter *pr, uint64_t h)
{
	unsigned i = (unsigned)h & (PR_SET - 1), n;

	for (n = 0; n < PR_SET; n++, i = (i + 1) & (PR_SET - 1)) {
		if (pr->set[i] == h)
			return false;
		if (!pr->set[i]) {
			pr->set[i] = h;
			return true;
		}
	}
	return false;
}

static void set_del(struct hotfs_promoter *pr, uint64_t h)
{
	unsigned i = (unsigned)h & (PR_SET - 1), j, n;

	for (n = 0; n < PR_SET; n++, i = (i + 1) & (PR_SET - 1)) {
		if (!pr->set[i])
			return;
		if (pr->set[i] == h)
			break;
	}
	if (n == PR_SET)
		return;
	/* backward-shift deletion keeps probe chains intact */
	pr->set[i] = 0;
	for (j = (i + 1) & (PR_SET - 1); pr->set[j];
	     j = (j + 1) & (PR_SET - 1)) {
		uint64_t v = pr->set[j];
		unsigned home = (unsigned)v & (PR_SET - 1);

		if (((j - home) & (PR_SET - 1)) >= ((j - i) & (PR_SET - 1))) {
			pr->set[i] = v;
			pr->set[j] = 0;
			i = j;
		}
	}
}

static void item_drop(struct hotfs_promoter *pr, struct pr_item *it)
{
	free(it->buf);
	it->buf = NULL;
	ino_unhold(pr->c->it, it->in);
}

bool pr_enqueue(struct hotfs_promoter *pr, struct pr_item *item)
{
	uint64_t h = item->h ? item->h : 1;
	bool ok = false;

	item->h = h;
	pthread_mutex_lock(&pr->lock);
	if (!pr->stop && pr->tail - pr->head < PR_QUEUE &&
	    (!item->buf || pr->buf_bytes + item->len <= PR_BUF_MAX)) {
		if (set_add(pr, h)) {
			pr->q[pr->tail++ & (PR_QUEUE - 1)] = *item;
			if (item->buf)
				pr->buf_bytes += item->len;
			ok = true;
			pthread_cond_signal(&pr->cond);
		}
	} else {
		stats_add(&pr->c->stats, STAT_NP_QUEUE_FULL, 1);
	}
	pthread_mutex_unlock(&pr->lock);
	if (ok)
		stats_add(&pr->c->stats, STAT_PROMO_QUEUED, 1);
	else
		item_drop(pr, item);
	return ok;
}

void pr_set_rate(struct hotfs_promoter *pr, uint64_t rate)
{
	atomic_store_explicit(&pr->rate, rate, memory_order_relaxed);
}

unsigned pr_depth(struct hotfs_promoter *pr)
{
	unsigned d;

	pthread_mutex_lock(&pr->lock);
	/* the item being promoted too: 0 says every promotion asked for
	 * is done (in the store or dropped), not only taken */
	d = pr->tail - pr->head + pr->working;
	pthread_mutex_unlock(&pr->lock);
	return d;
}

/*
 * Read the extent from the source; returns its length or -errno (-ESTALE
 * without reading when the file already changed since the extent was
 * queued: a write mix changes it all the time, and the read would only be
 * thrown away).
 */
static ssize_t read_source(struct hotfs_promoter *pr, struct pr_item *it,
			   struct hotfs_stamp *now)
{
	struct hotfs_cache *c = pr->c;
	uint64_t off = (uint64_t)it->extno << c->ext_shift;
	uint64_t len = c->extent;
	struct stat st;
	ssize_t n;
	int fd;

	if (off >= it->stamp.size || st_rec_is_block(it->extno))
		return -ERANGE;
	if (off + len > it->stamp.size)
		len = it->stamp.size - off;
	/* held, so never closed for the budget; but it may have been
	 * before the hold was taken */
	fd = ino_fd(c->it, it->in);
	if (fd < 0)
		return fd;
	fd = reopen_fd(c->proc_self_fd, fd, O_RDONLY | O_NOATIME);
	ino_fd_put(it->in);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0) {
		cache_stamp(&st, now);
		if (!cache_stamp_eq(now, &it->stamp)) {
			close(fd);
			return -ESTALE;
		}
	}
	it->buf = malloc(len);
	if (!it->buf) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, it->buf, len, (off_t)off);
	if (n >= 0 && fstat(fd, &st) == 0)
		cache_stamp(&st, now);
	else if (n >= 0)
		n = -EIO;
	else
		n = -errno;
	close(fd);
	return n;
}

/*
 * TinyLFU admission: once the store is full, an insert recycles the
 * oldest region, so a candidate must be hotter than what is being let go.
 * The victim is the policy's view of the FIFO tail (pol_victim: the last
 * extent region recycling declined to keep or, when it declined none, had
 * no room to keep).  Before any was let go, it is the record the next
 * recycling would let go first (st_next_victim): otherwise the insert
 * that fills a full store is admitted unasked, and its recycling lets go
 * 3/8 of the oldest region even when every record of it is in use.
 */
static bool admit(struct hotfs_cache *c, uint64_t h, uint32_t len)
{
	struct hotfs_store_stats ss;
	struct hotfs_key k;
	uint64_t victim;
	uint32_t rec;

	st_get_stats(c->st, &ss);
	/* full: every region in use, or regions already recycled (the
	 * free-space watermarks can hold the store below its capacity) */
	if (ss.regions_used < ss.regions && !ss.evictions)
		return true;
	victim = pol_victim(c->pol);
	if (!victim) {
		if (st_next_victim(c->st, len, &k, &rec))
			return true;	/* room: no one goes */
		victim = pol_hash(&k, rec);
	}
	return pol_admit(c->pol, h, victim);
}


static void promote_one(struct hotfs_promoter *pr, struct pr_item *it)
{
	struct hotfs_cache *c = pr->c;
	struct hotfs_stamp now = it->stamp;
	ssize_t n;
	int r;

	if (st_state(c->st) != ST_OK) {
		/* queued before the store failed or filled up */
		stats_add(&c->stats, STAT_NP_STORE, 1);
		return;
	}
	if (it->buf) {
		n = it->len;
		stats_add(&c->stats, STAT_PROMO_REUSED, 1);
	} else {
		/* pr_main asked admission before this read */
		n = read_source(pr, it, &now);
		if (n != -ESTALE)
			stats_add(&c->stats, STAT_PROMO_SRC_READS, 1);
		if (n <= 0 || !cache_stamp_eq(&now, &it->stamp)) {
			stats_add(&c->stats, STAT_NP_RACE, 1);
			return;
		}
	}
	if (!admit(c, it->h, (uint32_t)n)) {
		stats_add(&c->stats, STAT_NP_ADMISSION, 1);
		return;
	}
	if (!cache_within_budget(c, (uint32_t)n)) {
		stats_add(&c->stats, STAT_NP_BUDGET, 1);
		return;
	}
	r = cache_insert(c->st, it->in, &it->key, it->extno, &it->stamp,
			 it->gen, it->buf, (size_t)n);
	if (r < 0) {
		stats_add(&c->stats, r == -ESTALE ? STAT_NP_RACE :
			  STAT_NP_STORE, 1);
		return;
	}
	stats_add(&c->stats, STAT_PROMOTIONS, 1);
	stats_add(&c->stats, st_rec_is_block(it->extno) ? STAT_PROMO_BLOCKS :
			     STAT_PROMO_EXTENTS, 1);
	stats_add(&c->stats, STAT_PROMO_BYTES, (uint64_t)n);
}

static void *pr_main(void *arg)
{
	struct hotfs_promoter *pr = arg;
	uint64_t tokens = 0, last = (uint64_t)clock_mono_ns();

	pthread_mutex_lock(&pr->lock);
	for (;;) {
		struct pr_item it;
		uint64_t t, need, rate, wait;
		uint32_t held;

		while (!pr->stop && pr->head == pr->tail)
			pthread_cond_wait(&pr->cond, &pr->lock);
		if (pr->stop)
			break;
		it = pr->q[pr->head++ & (PR_QUEUE - 1)];
		pr->working++;
		held = it.buf ? it.len : 0;	/* read_source may set buf */
		pthread_mutex_unlock(&pr->lock);

		/* an extent the store would not admit is not read from the
		 * slow disk at all: once the store is full, most candidates
		 * of a wide random workload lose to the victim, and reading
		 * them first cost the readers one request each */
		if (!it.buf && st_state(pr->c->st) == ST_OK &&
		    !admit(pr->c, it.h, pr->c->extent)) {
			stats_add(&pr->c->stats, STAT_NP_ADMISSION, 1);
			goto done;
		}
		/* only what must read the slow disk again is limited: an
		 * extent assembled from readers' own reads costs it nothing,
		 * nor one that promote_one drops because of the store */
		rate = atomic_load_explicit(&pr->rate, memory_order_relaxed);
		if (rate && !it.buf && st_state(pr->c->st) == ST_OK) {
			need = pr->c->extent;
			for (;;) {
				t = (uint64_t)clock_mono_ns();
				tokens += (t - last) * rate / 1000000000ull;
				last = t;
				if (tokens > rate)	/* burst: 1 second */
					tokens = rate;
				if (tokens >= need || need > rate)
					break;
				stats_add(&pr->c->stats, STAT_NP_RATE, 1);
				/* a new rate (or none) applies soon */
				wait = (need - tokens) * 1000000ull / rate + 1;
				usleep((useconds_t)(wait < PR_RATE_POLL_MS *
						    1000ull ? wait :
						    PR_RATE_POLL_MS * 1000ull));
				rate = atomic_load_explicit(&pr->rate,
							    memory_order_relaxed);
				if (!rate)
					break;
			}
			tokens = tokens > need ? tokens - need : 0;
		}
		promote_one(pr, &it);
done:
		item_drop(pr, &it);
		pthread_mutex_lock(&pr->lock);
		set_del(pr, it.h);
		pr->buf_bytes -= held;
		pr->working--;
	}
	pthread_mutex_unlock(&pr->lock);
	return NULL;
}

int pr_new(struct hotfs_promoter **out, struct hotfs_cache *c, uint64_t rate)
{
	struct hotfs_promoter *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return -ENOMEM;
	pr->c = c;
	pr->rate = rate;
	pthread_mutex_init(&pr->lock, NULL);
	pthread_cond_init(&pr->cond, NULL);
	*out = pr;
	return 0;
}

int pr_start(struct hotfs_promoter *pr)
{
	int r = pthread_create(&pr->thread, NULL, pr_main, pr);

	if (r)
		return -r;
	pr->started = true;
	return 0;
}

void pr_free(struct hotfs_promoter *pr)
{
	if (!pr)
		return;
	pthread_mutex_lock(&pr->lock);
	pr->stop = true;
	pthread_cond_broadcast(&pr->cond);
	pthread_mutex_unlock(&pr->lock);
	if (pr->started)
		pthread_join(pr->thread, NULL);
	while (pr->head != pr->tail)
		item_drop(pr, &pr->q[pr->head++ & (PR_QUEUE - 1)]);
	pthread_cond_destroy(&pr->cond);
	pthread_mutex_destroy(&pr->lock);
	free(pr);
}
