// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Insert if still current (see include/hotfs/cache_insert.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "hotfs/cache_insert.h"

static bool stamp_eq(const struct hotfs_stamp *a, const struct hotfs_stamp *b)
{
	return a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

void __cache_note_write(struct hotfs_inode *in, bool known, uint64_t gen,
			uint64_t lo, uint64_t hi, const struct hotfs_stamp *old,
			const struct hotfs_stamp *now)
{
	struct hotfs_wr_notes *w = in->cw.wr_notes;
	struct hotfs_wr_note *n;

	if (!w) {
		/* the first write to end: any before it ended before it
		 * began (or would have made the notes) */
		w = calloc(1, sizeof(*w));
		if (!w)
			return;		/* nothing is ever carried */
		w->from = gen - 1;
		in->cw.wr_notes = w;
	}
	if (!known) {
		/* nothing before this write can be vouched for */
		w->from = in->cw.write_gen;
		w->count = 0;
		return;
	}
	n = &w->n[w->next];
	if (w->count == WR_NOTES) {
		if (w->from < n->gen_end)
			w->from = n->gen_end;
	} else {
		w->count++;
	}
	w->next = (w->next + 1) % WR_NOTES;
	n->gen_end = in->cw.write_gen;
	n->lo = lo;
	n->hi = hi;
	n->old = *old;
	n->now = *now;
}

/*
 * Bytes [lo, hi) read at stamp with write_gen gen, before writes through
 * the mount that all missed them: the stamp they are current under now,
 * in *cur.  False if a write touched them, changed the size where it
 * matters, is unknown, or if the stamps do not chain (a change behind the
 * mount came between, or writes overlapped in time).
 */
static bool carried(const struct hotfs_inode *in, uint64_t gen, uint64_t lo,
		    uint64_t hi, uint32_t len, uint32_t max,
		    const struct hotfs_stamp *stamp, struct hotfs_stamp *cur)
{
	const struct hotfs_wr_notes *w = in->cw.wr_notes;
	unsigned i, used = 0;

	if (!w || in->cw.wr_inflight || gen < w->from)
		return false;	/* no notes: a write ended, unnoted */
	*cur = *stamp;
	for (i = 0; i < w->count; i++) {
		const struct hotfs_wr_note *n =
			&w->n[(w->next + WR_NOTES - w->count + i) % WR_NOTES];
		uint64_t keep_end;

		if (n->gen_end <= gen)
			continue;
		if (!stamp_eq(&n->old, cur) || (n->lo < hi && n->hi > lo))
			return false;
		keep_end = n->old.size < n->now.size ? n->old.size :
			   n->now.size;
		/* as st_restamp: a size change keeps whole records only,
		 * and those before both ends */
		if (n->old.size != n->now.size && (hi > keep_end || len < max))
			return false;
		*cur = n->now;
		used++;
	}
	return used > 0;
}

int __cache_insert(struct hotfs_store *st, struct hotfs_inode *in,
		   const struct hotfs_key *k, uint32_t extno,
		   const struct hotfs_stamp *stamp, uint64_t gen,
		   const void *buf, size_t len)
{
	struct hotfs_stamp cur = *stamp;
	int r;

	if (in->cw.write_gen != gen) {
		uint32_t ext = st_extent(st);
		uint64_t lo = st_rec_off(extno, ext);

		if (!carried(in, gen, lo, lo + len, (uint32_t)len,
			     st_rec_max(extno, ext), stamp, &cur))
			return -ESTALE;
	}
	r = st_insert(st, k, extno, &cur, buf, len);
	if (r < 0)
		return r;
	if (in->cw.cached_extents_hint <= extno)
		in->cw.cached_extents_hint = (uint64_t)extno + 1;
	return 0;
}

int cache_insert(struct hotfs_store *st, struct hotfs_inode *in,
		 const struct hotfs_key *k, uint32_t extno,
		 const struct hotfs_stamp *stamp, uint64_t gen,
		 const void *buf, size_t len)
{
	int r;

	pthread_mutex_lock(&in->m);
	r = __cache_insert(st, in, k, extno, stamp, gen, buf, len);
	pthread_mutex_unlock(&in->m);
	return r;
}

bool cache_within_budget(struct hotfs_cache *c, uint32_t len)
{
	if (!atomic_load_explicit(&c->budget.per_day, memory_order_relaxed))
		return true;
	/* the count alone: asked per candidate, and per record of a flush */
	return budget_admit(&c->budget, (uint64_t)time(NULL),
			    st_bytes_written(c->st), st_insert_cost(c->st, len),
			    (double)(random() & 0xffffff) / (double)0x1000000);
}
