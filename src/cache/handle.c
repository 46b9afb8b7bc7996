// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Open files through the mount (see include/hotfs/handle.h): handles,
 * access counting, and extents assembled from a handle's reads for
 * promotion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/fileio.h"
#include "hotfs/handle.h"
#include "hotfs/promote.h"

static pthread_mutex_t fh_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hotfs_fh *fh_list;	/* protected by fh_list_lock */

int fh_source(struct hotfs_fh *fh, struct hotfs_itable *it,
	      struct hotfs_inode *in, int proc_self_fd, bool *opened)
{
	int fd = atomic_load(&fh->fd), pfd;

	*opened = false;
	if (fd >= 0 || !fh->lazy)
		return fd;
	pthread_mutex_lock(&fh->m);
	fd = atomic_load(&fh->fd);
	if (fd < 0) {
		pfd = ino_fd(it, in);
		fd = pfd;
		if (pfd >= 0) {
			fd = reopen_fd(proc_self_fd, pfd, fh->lazy_flags);
			ino_fd_put(in);
		}
		if (fd >= 0) {
			atomic_store(&fh->fd, fd);
			*opened = true;
		}
	}
	pthread_mutex_unlock(&fh->m);
	return fd;
}

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

void fh_free_all(void)
{
	while (fh_list)
		fh_free(fh_list);
}

/*
 * The run a read belongs to: a shared handle starts a new one at every
 * read that does not carry on where its last read ended (seq).
 */
uint64_t fh_run(struct hotfs_fh *fh, bool seq)
{
	uint64_t run = 0;

	if (fh->shared) {
		pthread_mutex_lock(&fh->m);
		run = seq ? fh->run : ++fh->run;
		pthread_mutex_unlock(&fh->m);
	}
	return run;
}

static int64_t mono_now(void)
{
	return clock_mono_ns();
}

static int64_t (*fh_now)(void) = mono_now;

void fh_set_clock(int64_t (*now)(void))
{
	fh_now = now ? now : mono_now;
}

/*
 * Has this handle touched extno lately?  Remembers it if not.  A shared
 * handle stands for every reader of its inode: what it touched counts
 * again from another run (a reader starting over, another reader) once
 * NOFH_WINDOW_NS have passed; within one run (readahead's requests of one
 * reader) it does not.
 */
bool fh_seen(struct hotfs_fh *fh, uint32_t extno, uint64_t run)
{
	int64_t now = fh->shared ? fh_now() : 0;
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

bool fh_counts(struct hotfs_cache *c, struct hotfs_fh *fh, size_t size,
	       off_t off, bool *seq)
{
	uint64_t run, cutoff = atomic_load(&c->seqcutoff);

	*seq = seq_note(&fh->seq, off, size, fh_now(), &run);
	if (cutoff && run > cutoff) {
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

void fh_release(struct hotfs_cache *c, struct hotfs_inode *in,
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
			if (sx->gen == gen && cache_stamp_eq(&sx->stamp, stamp))
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


/* One candidate whose bytes the read holds in part: assemble it. */
static void __stitch_cand(struct hotfs_cache *c, struct hotfs_inode *in,
			  struct hotfs_fh *fh, const struct hotfs_key *k,
			  const struct hotfs_stamp *stamp, uint64_t gen,
			  const struct fh_cand *g, uint32_t len, uint64_t end,
			  const char *data, uint64_t data_off)
{
	uint64_t ext_start = (uint64_t)g->extno << c->ext_shift;
	struct fh_stitch *sx;
	uint32_t afrom, to;

	sx = __stitch_get(c, in, fh, g->extno, len, stamp, gen);
	if (!sx) {
		enqueue(c, in, k, g->extno, stamp, gen, NULL, 0);
		return;
	}
	/* data + (g->start - data_off) holds extent offset g->start -
	 * ext_start; stitch_add copies whole blocks from the aligned start */
	afrom = (uint32_t)(g->start - ext_start);
	afrom = (afrom + FH_BLK - 1) / FH_BLK * FH_BLK;
	to = (uint32_t)(end - ext_start);
	if (afrom < to && stitch_add(sx, afrom, to,
				     data + (ext_start + afrom - data_off))) {
		enqueue(c, in, k, sx->extno, &sx->stamp, sx->gen, sx->buf,
			sx->len);
		free(sx->map);
		sx->buf = NULL;
		sx->map = NULL;
	}
}

void fh_queue(struct hotfs_cache *c, struct hotfs_inode *in,
	      struct hotfs_fh *fh, const struct hotfs_key *k,
	      const struct hotfs_stamp *stamp, uint64_t gen,
	      const struct fh_cand *v, unsigned n, const char *data,
	      uint64_t data_off, uint64_t data_len)
{
	unsigned i;

	pthread_mutex_lock(&fh->m);
	for (i = 0; i < n; i++) {
		const struct fh_cand *g = &v[i];
		uint64_t ext_start = st_rec_off(g->extno, c->extent);
		uint32_t len = cache_ext_len(c, g->extno, stamp->size);
		uint64_t end = data ? data_off + data_len : 0;

		if (end > g->end)
			end = g->end;
		if (!len)
			continue;
		/* a block goes with the reader's bytes, or not at all */
		if (st_rec_is_block(g->extno) &&
		    (!data || g->start != ext_start ||
		     end < ext_start + len))
			continue;
		if (!data || end <= g->start) {
			enqueue(c, in, k, g->extno, stamp, gen, NULL, 0);
		} else if (g->start == ext_start && end >= ext_start + len) {
			char *b = malloc(len);

			if (b)
				memcpy(b, data + (ext_start - data_off), len);
			enqueue(c, in, k, g->extno, stamp, gen, b,
				b ? len : 0);
		} else {
			__stitch_cand(c, in, fh, k, stamp, gen, g, len, end,
				      data, data_off);
		}
	}
	pthread_mutex_unlock(&fh->m);
}
