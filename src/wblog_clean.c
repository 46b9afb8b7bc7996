// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log's cleaner.  The log's tail moves only past records
 * with no dirty block left, and a block leaves the map when it is flushed
 * or written again.  Random writes over a large file leave the oldest
 * records mostly dead (their blocks written again since) but each with a
 * live block or two, and the flusher frees them at the source's pace: a
 * disk's few hundred writes a second.  Without more, a full log would
 * hold writers to that pace although most of it is dead.
 *
 * So a writer that finds the log full takes the oldest records (up to the
 * reserve below), copies their live blocks to the head as new records
 * (sorted by file and block, adjacent dirty bytes of a file coalesced
 * into one record), and moves the tail past the old ones: the log then
 * holds about its live data, and a write waits for the source only when
 * the log is full of live blocks.  Each copy is the block's newest copy
 * (nothing newer exists, else the old record would not hold it live), so
 * a replay that finds both the old record and its copy ends with the same
 * bytes; the tail passes the old records only once the copies are durable
 * (wblog_release syncs up to clean_seq first).  A copy keeps its oldest
 * record's time (the data's age, for writeback_delay=).
 *
 * The reserve: writes' records leave wl->reserve blocks free for the
 * cleaner's copies and for trims.  The copies of a batch of records never
 * take more blocks than the batch (the live blocks are a subset of its
 * data blocks, and coalescing only saves headers; a run cut where the
 * area wraps adds a header, and a one-block tail is padded: two blocks at
 * most), so a batch of at most the reserve less two always fits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hotfs/fileio.h"
#include "wblog_i.h"

#define RUN_MAX	(WB_REC_MAX / WB_BLOCK)

uint64_t wl_reserve(uint64_t nblocks)
{
	/* 1/16 of the log, at least two records of the largest size (so a
	 * batch always makes progress), at most 1/8 of a small log */
	uint64_t r = nblocks / 16;

	if (r < 2 * (RUN_MAX + 1))
		r = 2 * (RUN_MAX + 1);
	if (r > nblocks / 8)
		r = nblocks / 8;
	return r;
}

struct cl_item {
	struct wl_ent *e;
	int64_t time_ns;	/* of the record it is copied from */
};

static int item_cmp(const void *a, const void *b)
{
	const struct wl_ent *x = ((const struct cl_item *)a)->e,
			    *y = ((const struct cl_item *)b)->e;

	if (x->f != y->f)
		return (uintptr_t)x->f < (uintptr_t)y->f ? -1 : 1;
	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

/* Items i - 1 and i are one record: the same file, the next block, the
 * dirty bytes contiguous across the boundary. */
static bool joins(const struct cl_item *it, size_t i, size_t len)
{
	const struct wl_ent *p = it[i - 1].e, *e = it[i].e;

	return len < RUN_MAX && p->f == e->f && e->blk == p->blk + 1 &&
	       p->hi == WB_BLOCK && e->lo == 0;
}

/*
 * The live blocks of the records from the tail, up to max blocks of them
 * (at least the first record): *n items (*it malloc'd), the blocks the
 * records take in *batch.  Under m.
 */
static int collect(struct wblog *wl, uint64_t max, struct cl_item **it,
		   size_t *n, uint64_t *batch)
{
	size_t i, cap = 0;

	*it = NULL;
	*n = 0;
	*batch = 0;
	for (i = 0; i < wl->rq_n; i++) {
		struct wl_recmem *r = &wl->rq[(wl->rq_head + i) % wl->rq_cap];
		uint64_t b;

		if (i && *batch + r->nblk > max)
			break;
		*batch += r->nblk;
		for (b = r->blk0; r->live && r->f && b < r->blk0 + r->ndata;
		     b++) {
			struct wl_ent *e = wl_ent_find(wl, r->f, b);

			if (!e || e->seq != wl->rq_seq + i)
				continue;
			if (*n == cap) {
				size_t c = cap ? 2 * cap : 256;
				struct cl_item *x = realloc(*it,
							    c * sizeof(*x));

				if (!x)
					return -ENOMEM;
				*it = x;
				cap = c;
			}
			(*it)[(*n)++] = (struct cl_item){ e, r->time_ns };
		}
	}
	qsort(*it, *n, sizeof(**it), item_cmp);
	return 0;
}

/* The blocks the copies of the n items take. */
static uint64_t plan(const struct cl_item *it, size_t n)
{
	uint64_t blocks = 0;
	size_t i, len = 0;

	for (i = 0; i < n; i++) {
		if (i && joins(it, i, len)) {
			len++;
			blocks++;
			continue;
		}
		len = 1;
		blocks += 2;
	}
	return blocks;
}

/*
 * Copy the run it[0..len) as records (cut where the area wraps); under
 * m.  buf: room for RUN_MAX blocks.
 */
static int copy_run(struct wblog *wl, const struct cl_item *it, size_t len,
		    char *buf)
{
	while (len) {
		size_t k, m = len, left = wl->nblocks - wl->head;
		struct wl_rec h = { .type = WR_DATA };
		const struct wl_ent *a = it[0].e, *z;
		uint64_t pos;
		int err;

		/* the part that fits before the end of the area (a header
		 * alone there is padded: wl_append starts again at 0) */
		if (left >= 2 && left < 1 + m)
			m = left - 1;
		z = it[m - 1].e;
		h.time_ns = it[0].time_ns;
		for (k = 0; k < m; k++) {
			if (pread_full(wl->fd, buf + k * WB_BLOCK, WB_BLOCK,
				       blk_off(it[k].e->pos)) != WB_BLOCK)
				return -EIO;
			if (it[k].time_ns < h.time_ns)
				h.time_ns = it[k].time_ns;
		}
		h.dev = a->f->fid.dev;
		h.ino = a->f->fid.ino;
		h.birth = a->f->fid.birth;
		h.off = a->blk * WB_BLOCK + a->lo;
		h.len = z->blk * WB_BLOCK + z->hi - h.off;
		h.nblk = (uint32_t)m;
		err = wl_append(wl, &h, buf, true, &pos);
		if (!err)
			err = wl_apply_data(wl, &h, pos);
		if (err)
			return err;
		/* a copy, not a write over a dirty block */
		wl->absorbed -= m;
		wl->cleaned += h.len;
		wl->clean_seq = h.seq;
		it += m;
		len -= m;
	}
	return 0;
}

int64_t wl_clean(struct wblog *wl)
{
	struct cl_item *it = NULL;
	uint64_t max, batch = 0, need = 0;
	char *buf = NULL;
	size_t n = 0, i, len;
	int err = 0;

	pthread_mutex_lock(&wl->m);
	if (wl->cleaning || wl->releasing) {
		/* another writer's turn: try again once it is done */
		while (wl->cleaning || wl->releasing)
			pthread_cond_wait(&wl->cv, &wl->m);
		pthread_mutex_unlock(&wl->m);
		return 1;
	}
	wl->cleaning = true;
	max = wl->reserve > 2 ? wl->reserve - 2 : 1;
	for (;;) {
		err = collect(wl, max, &it, &n, &batch);
		if (err)
			goto out;
		need = plan(it, n);
		/* the copies must fit where the log has room now */
		if (need + 2 <= wl->nblocks - wl->used || max == 1)
			break;
		free(it);
		it = NULL;
		max /= 2;
	}
	if (need + 2 > wl->nblocks - wl->used || need + 2 > batch) {
		need = batch;		/* nothing to gain */
		goto out;
	}
	buf = malloc(RUN_MAX * WB_BLOCK);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0, len = 0; i < n && !err; i++) {
		len = i && joins(it, i, len) ? len + 1 : 1;
		if (i + 1 == n || !joins(it, i + 1, len))
			err = copy_run(wl, it + i + 1 - len, len, buf);
	}
out:
	wl->cleaning = false;
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
	free(buf);
	free(it);
	if (!err && need + 2 <= batch)
		err = wblog_release(wl);
	return err ? err : (int64_t)(batch - need);
}
