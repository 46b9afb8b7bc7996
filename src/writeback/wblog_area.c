// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log's area (include/hotfs/wblog.h gives the design):
 * appending records at the head, reading a block's copy, the group
 * commit, and moving the tail past the records with nothing live.  What
 * the writer (wblog.c) and the cleaner (wblog_clean.c) share.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hotfs/fileio.h"
#include "wblog_i.h"

/*
 * The blocks a record needs at head, or -ENOSPC; *pad: blocks skipped
 * at the end of the area to fit it.  A write's record leaves the
 * cleaner's reserve free (all: a trim's or the cleaner's may use it).
 */
static int room(const struct wblog *wl, uint64_t need, bool all,
		uint64_t *pad)
{
	uint64_t lim = all ? wl->nblocks : wl->nblocks - wl->reserve;

	*pad = 0;
	if (wl->head + need > wl->nblocks)
		*pad = wl->nblocks - wl->head;
	if (wl->used + *pad + need > lim)
		return -ENOSPC;
	return 0;
}

/* A write of the log failed with err: its device failing, or read-only,
 * is the log's state from now on (wblog_error), as a failed sync is. */
static int write_failed(struct wblog *wl, int err)
{
	if (err == -EIO || err == -EROFS)
		wl->sync_err = err;
	return err;
}

int wl_append(struct wblog *wl, struct wl_rec *h, const struct wl_mblk *l,
	      const char *data, bool all, uint64_t *data_pos,
	      uint64_t *sums)
{
	uint64_t pad, need = 1 + h->nblk, start;
	char hb[WB_BLOCK] __attribute__((aligned(8)));
	struct iovec iov[2];
	uint32_t k;
	ssize_t n;
	int err;

	if (wl->failed)
		return -ESTALE;
	if (wl->sync_err)
		return wl->sync_err;
	err = room(wl, need, all, &pad);
	if (err)
		return err;
	start = wl->head;
	if (pad) {
		struct wl_rec p = { .type = WR_PAD, .seq = wl->appended + 1,
				    .epoch = wl->epoch, .synced = wl->synced,
				    .time_ns = h->time_ns };

		memcpy(p.magic, WR_MAGIC, 8);
		memset(hb, 0, sizeof(hb));
		memcpy(hb, &p, sizeof(p));
		p.csum = wl_hdr_csum(hb, wl->salt);
		memcpy(hb, &p, sizeof(p));
		n = pwrite_full(wl->fd, hb, WB_BLOCK, blk_off(wl->head));
		if (n < 0)
			return write_failed(wl, (int)n);
		err = wl_rq_push(wl, start, pad, h->time_ns);
		if (err)
			return err;
		wl->appended++;
		wl->used += pad;
		wl->head = 0;
		start = 0;
	} else if (wl->head == wl->nblocks) {
		wl->head = start = 0;
	}
	memcpy(h->magic, WR_MAGIC, 8);
	h->seq = wl->appended + 1;
	h->epoch = wl->epoch;
	h->synced = wl->synced;
	h->csum = 0;
	for (k = 0; k < h->nblk; k++)
		sums[k] = l && (l[k].flags & WL_MBLK_LOST) ? 0 :
			  wl_blk_csum(data + (size_t)k * WB_BLOCK);
	memset(hb, 0, sizeof(hb));
	memcpy(hb, h, sizeof(*h));
	if (l)
		memcpy(hb + sizeof(*h), l, h->nblk * sizeof(*l));
	if (h->type == WR_DATA || h->type == WR_MULTI)
		memcpy(hb + wl_sums_at(h), sums, h->nblk * sizeof(*sums));
	h->csum = wl_hdr_csum(hb, wl->salt);
	memcpy(hb, h, sizeof(*h));
	iov[0].iov_base = hb;
	iov[0].iov_len = WB_BLOCK;
	iov[1].iov_base = (void *)data;
	iov[1].iov_len = (size_t)h->nblk * WB_BLOCK;
	n = pwritev(wl->fd, iov, h->nblk ? 2 : 1, blk_off(start));
	if (n != (ssize_t)(need * WB_BLOCK))	/* nothing of it counts */
		return write_failed(wl, n < 0 ? -errno : -EIO);
	err = wl_rq_push(wl, start, need, h->time_ns);
	if (err)
		return err;
	wl->appended = h->seq;
	wl->used += need;
	wl->head = start + need;
	*data_pos = start + 1;
	return 0;
}

int wl_read_copy(struct wblog *wl, struct wl_ent *e, void *blk)
{
	int err = -EBADMSG;

	/* a lost block carried forward has no copy */
	if (e->csum) {
		err = pread_full(wl->fd, blk, WB_BLOCK, blk_off(e->pos)) ==
		      WB_BLOCK ? 0 : -EIO;
		if (!err && wl_blk_csum(blk) != e->csum) {
			err = -EBADMSG;
			if (!e->lost)
				wl->csum_failures++;
		}
	}
	if (err && !e->lost) {
		wl->lost += e->hi - e->lo;
		if (e->seq > wl->lost_seq)
			wl->lost_seq = e->seq;
	}
	/* (a device that failed may read again) */
	wl_ent_lost(wl, e, err != 0);
	return err;
}

/*
 * Group commit: the first caller to find no fdatasync running runs one
 * for every record appended so far; the others wait for it, and run the
 * next one if theirs came after it began.
 */
int wblog_sync(struct wblog *wl, uint64_t seq)
{
	int err = 0;

	pthread_mutex_lock(&wl->m);
	if (!seq)
		seq = wl->appended;
	/* a failed log vouches for nothing: its records are flushed from
	 * what it still holds, durable or not */
	while (!wl->failed) {
		uint64_t target;

		err = wl->sync_err;
		if (err || wl->synced >= seq)
			break;
		if (wl->syncing) {
			pthread_cond_wait(&wl->cv, &wl->m);
			continue;
		}
		wl->syncing = true;
		target = wl->appended;
		pthread_mutex_unlock(&wl->m);
		err = fdatasync(wl->fd) ? -errno : 0;
		pthread_mutex_lock(&wl->m);
		wl->syncs++;
		wl->syncing = false;
		/* after a failed fdatasync the kernel may have dropped the
		 * pages' error: nothing appended before can be vouched for */
		if (err)
			wl->sync_err = err == -EROFS ? err : -EIO;
		else if (target > wl->synced)
			wl->synced = target;
		pthread_cond_broadcast(&wl->cv);
	}
	pthread_mutex_unlock(&wl->m);
	return err;
}

int wl_lost_durable(struct wblog *wl)
{
	uint64_t tail_pos, tail_seq, seq;
	int err;

	pthread_mutex_lock(&wl->m);
	while (wl->releasing)
		pthread_cond_wait(&wl->cv, &wl->m);
	if (wl->lost_seq <= wl->hdr_synced || wl->sync_err) {
		err = wl->sync_err;
		pthread_mutex_unlock(&wl->m);
		return err;
	}
	/* the tail as the header has it (a release changes both under
	 * releasing) */
	wl->releasing = true;
	seq = wl->appended;
	tail_seq = wl->rq_seq;
	tail_pos = wl->rq_n ? wl->rq[wl->rq_head].start : wl->head;
	pthread_mutex_unlock(&wl->m);
	err = wblog_sync(wl, seq);
	if (!err)
		err = wl_super_write(wl, tail_pos, tail_seq, seq);
	pthread_mutex_lock(&wl->m);
	wl->releasing = false;
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
	return err;
}

int wblog_release(struct wblog *wl)
{
	uint64_t n = 0, blocks = 0, tail_pos, tail_seq, sync_to;
	size_t i;
	int err;

	pthread_mutex_lock(&wl->m);
	while (wl->releasing)
		pthread_cond_wait(&wl->cv, &wl->m);
	for (i = 0; i < wl->rq_n; i++) {
		struct wl_recmem *r = &wl->rq[(wl->rq_head + i) % wl->rq_cap];

		if (r->live)
			break;
		blocks += r->nblk;
		n++;
	}
	tail_seq = wl->rq_seq + n;
	tail_pos = n < wl->rq_n ?
		   wl->rq[(wl->rq_head + n) % wl->rq_cap].start : wl->head;
	if (!n || wl->sync_err) {
		err = wl->failed ? 0 : wl->sync_err;
		pthread_mutex_unlock(&wl->m);
		return err;
	}
	wl->releasing = true;
	/*
	 * Every record appended so far durable before the header says the
	 * tail passed the records with nothing live: the records up to the
	 * new tail (a replay must find the sequence it names), the
	 * cleaner's copies of the blocks they held, and the later records
	 * that made them dead, which hold their blocks' bytes anew (a
	 * write's record holds the block's whole dirty range) or cut them.
	 * A header that reached the device before those records would pass
	 * an acknowledged write whose only durable copy it was.
	 */
	sync_to = wl->appended;
	pthread_mutex_unlock(&wl->m);
	err = wblog_sync(wl, sync_to);
	if (!err)
		err = wl_super_write(wl, tail_pos, tail_seq, sync_to);
	pthread_mutex_lock(&wl->m);
	wl->releasing = false;
	/*
	 * A failed log (wblog_fail) that still takes its header (moved
	 * away, or deleted: not its device failing) is told that what was
	 * flushed is done, so that no later replay of it, the cachedir moved
	 * back, writes it over what changed on the source since; if it does
	 * not take it, nothing is lost by trying.
	 */
	if (err && wl->failed) {
		err = 0;
	} else if (!err) {
		/* appends only add at the back meanwhile */
		wl_rq_drop(wl, n);
		wl->used -= blocks;
		wl->dead = wl->dead > n ? wl->dead - n : 0;
	}
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
	return err;
}

void wblog_fail(struct wblog *wl)
{
	pthread_mutex_lock(&wl->m);
	wl->failed = true;
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
}

bool wblog_failed(struct wblog *wl)
{
	bool f;

	pthread_mutex_lock(&wl->m);
	f = wl->failed;
	pthread_mutex_unlock(&wl->m);
	return f;
}

int wblog_error(struct wblog *wl)
{
	int err;

	pthread_mutex_lock(&wl->m);
	err = wl->sync_err;
	pthread_mutex_unlock(&wl->m);
	return err;
}

int wblog_stat(struct wblog *wl, struct stat *st)
{
	return fstat(wl->fd, st) ? -errno : 0;
}

int wblog_discard(struct wblog *wl)
{
	struct wl_file *f, *next;
	size_t i;

	pthread_mutex_lock(&wl->m);
	for (i = 0; i < wl->eh_size; i++)
		while (wl->eh[i])
			wl_ent_drop(wl, &wl->eh[i]);
	for (i = 0; i < wl->fh_size; i++)
		for (f = wl->fh[i]; f; f = next) {
			next = f->next;
			wl_file_put(wl, f);
		}
	/* nothing of it lost, nothing of it damaged that matters now */
	wl->lost = 0;
	memset(&wl->rp, 0, sizeof(wl->rp));
	pthread_mutex_unlock(&wl->m);
	return wblog_release(wl);
}
