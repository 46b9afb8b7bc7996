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
 * reserve below), copies their live blocks to the head as MULTI records
 * (hotfs/wblog_i.h: up to WL_MULTI_MAX blocks of one file, adjacent or
 * not, under one header; a lost block goes as lost, with no copy), and
 * moves the tail past the old ones: a block
 * that cost a header of its own costs its block alone from then on, the
 * log holds about its live data, and a write waits for the source only
 * when the log is full of live blocks.  Each copy is the block's newest copy
 * (nothing newer exists, else the old record would not hold it live), so
 * a replay that finds both the old record and its copy ends with the same
 * bytes; the tail passes the old records only once the copies are durable
 * (wblog_release syncs every record appended first).  A copy keeps its
 * oldest record's time (the data's age, for writeback_delay=).
 *
 * The reserve: writes' records leave wl->reserve blocks free for the
 * cleaner's copies and for trims.  The copies of a batch of records never
 * take more blocks than the batch (the live blocks are a subset of its
 * data blocks, and a MULTI record holds blocks of several records under
 * one header; a record cut where the area wraps adds a header, and a
 * one-block tail is padded: two blocks at most), so a batch of at most
 * the reserve less two always fits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hotfs/fileio.h"
#include "wblog_i.h"

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
		uint32_t k;

		if (i && *batch + r->nblk > max)
			break;
		*batch += r->nblk;
		for (k = 0; r->live && r->f && k < r->ndata; k++) {
			struct wl_ent *e = wl_ent_find(wl, r->f,
						       wl_rec_blk(r, k));

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
	if (*n)
		qsort(*it, *n, sizeof(**it), item_cmp);
	return 0;
}

/* Items i - 1 and i go in one record: the same file, within its size. */
static bool joins(const struct cl_item *it, size_t i, size_t len)
{
	return len < WL_MULTI_MAX && it[i - 1].e->f == it[i].e->f;
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
 * Copy the items it[0..len) of one file as MULTI records (cut where the
 * area wraps); under m.  buf: room for WL_MULTI_MAX blocks.
 */
static int copy_group(struct wblog *wl, const struct cl_item *it,
		      size_t len, char *buf)
{
	struct wl_mblk l[WL_MULTI_MAX];
	uint64_t sums[WL_MULTI_MAX];

	while (len) {
		size_t k, m = len, left = wl->nblocks - wl->head;
		struct wl_rec h = { .type = WR_MULTI };
		const struct wl_file *f = it[0].e->f;
		uint64_t pos;
		int err;

		/* the part that fits before the end of the area (a header
		 * alone there is padded: wl_append starts again at 0) */
		if (left >= 2 && left < 1 + m)
			m = left - 1;
		h.time_ns = it[0].time_ns;
		for (k = 0; k < m; k++) {
			struct wl_ent *e = it[k].e;
			char *b = buf + k * WB_BLOCK;

			/* a lost block (found lost now, too) goes forward
			 * lost: its bytes never become the source's older
			 * ones */
			if (e->lost || wl_read_copy(wl, e, b))
				memset(b, 0, WB_BLOCK);
			l[k] = (struct wl_mblk){ .blk = e->blk, .lo = e->lo,
						 .hi = e->hi,
						 .flags = e->lost ?
							  WL_MBLK_LOST : 0 };
			if (it[k].time_ns < h.time_ns)
				h.time_ns = it[k].time_ns;
		}
		h.dev = f->fid.dev;
		h.ino = f->fid.ino;
		h.birth = f->fid.birth;
		h.nblk = (uint32_t)m;
		err = wl_append(wl, &h, l, buf, true, &pos, sums);
		if (!err)
			err = wl_apply_multi(wl, &h, l, pos, sums);
		if (err)
			return err;
		/* a copy, not a write over a dirty block */
		wl->absorbed -= m;
		for (k = 0; k < m; k++)
			wl->cleaned += l[k].hi - l[k].lo;
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
	buf = malloc(WL_MULTI_MAX * WB_BLOCK);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0, len = 0; i < n && !err; i++) {
		len = i && joins(it, i, len) ? len + 1 : 1;
		if (i + 1 == n || !joins(it, i + 1, len))
			err = copy_group(wl, it + i + 1 - len, len, buf);
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
