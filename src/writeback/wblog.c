// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log: dirty data of writemode=writeback in CACHEDIR/wlog.
 * include/hotfs/wblog.h gives the design (layout, what is durable when,
 * locks); this file writes records, reads the dirty bytes over the
 * file's own, trims, and hands out the oldest dirty runs for flushing.
 * The area (appending, the group commit, the tail) is in
 * wblog_area.c, the cleaner in wblog_clean.c, the map in
 * wblog_map.c, open and replay in wblog_open.c (wblog_i.h:
 * what they share).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/fileio.h"
#include "wblog_i.h"

/*
 * A record's wall clock: the coarse one the kernel stamps files with, so
 * that the source's mtime after a flush is never before the time of the
 * writes it carries (the mount reports that time until then).
 */
static int64_t rec_time_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return clock_ts_ns(&ts);
}

/* fid's counter of forgotten bytes */
static size_t gen_bucket(const struct wb_fid *fid)
{
	return (size_t)((fid->ino ^ fid->dev) % WL_GEN_BUCKETS);
}

/*----------------------------------------------------------------*/
/* writing */

/*
 * The gaps a write of [off, off + len) would leave within its first and
 * last blocks beside their dirty bytes: up to two ranges of the file
 * (g[k][0], length g[k][1]); under m.
 */
static unsigned gaps(struct wblog *wl, struct wl_file *f, uint64_t off,
		     uint64_t len, uint64_t g[2][2])
{
	uint64_t end = off + len, b0 = off / WB_BLOCK,
		 b1 = (end - 1) / WB_BLOCK;
	struct wl_ent *e;
	unsigned n = 0;

	if (!f)
		return 0;
	e = wl_ent_find(wl, f, b0);
	if (e && b0 * WB_BLOCK + e->hi < off) {
		g[n][0] = b0 * WB_BLOCK + e->hi;
		g[n][1] = off - g[n][0];
		n++;
	}
	e = wl_ent_find(wl, f, b1);
	if (e && b1 * WB_BLOCK + e->lo > end) {
		g[n][0] = end;
		g[n][1] = b1 * WB_BLOCK + e->lo - end;
		n++;
	}
	return n;
}

/*
 * Build and append one record for [off, off + len) (within WB_REC_MAX of
 * blocks), taking in the dirty bytes beside it in its first and last
 * blocks (and the gap bytes in gb); under m.
 */
static int write_one(struct wblog *wl, const struct wb_fid *fid,
		     uint64_t off, const char *src, size_t len,
		     uint64_t g[2][2], char *gb[2], unsigned ng)
{
	uint64_t end = off + len, b0 = off / WB_BLOCK,
		 b1 = (end - 1) / WB_BLOCK, lo = off, hi = end, pos;
	struct wl_file *f = wl_file_get(wl, fid);
	struct wl_rec h = { .type = WR_DATA };
	uint64_t sums[WB_REC_MAX / WB_BLOCK];
	struct wl_ent *e0, *e1;
	char *data;
	unsigned k;
	int err;

	if (!f)
		return -ENOMEM;
	data = calloc(b1 - b0 + 1, WB_BLOCK);
	if (!data) {
		wl_file_put(wl, f);
		return -ENOMEM;
	}
	/* the first and last blocks' dirty bytes around the write (none
	 * needed if it covers them: a lost block written over whole is
	 * found again) */
	e0 = wl_ent_find(wl, f, b0);
	e1 = b1 != b0 ? wl_ent_find(wl, f, b1) : NULL;
	if (e0 && b0 * WB_BLOCK + e0->lo >= off &&
	    b0 * WB_BLOCK + e0->hi <= end)
		e0 = NULL;
	if (e1 && b1 * WB_BLOCK + e1->hi <= end)
		e1 = NULL;
	err = 0;
	if (e0 && wl_read_copy(wl, e0, data))
		err = -EIO;
	if (e1 && wl_read_copy(wl, e1, data + (b1 - b0) * WB_BLOCK))
		err = -EIO;
	if (err)
		goto out;
	if (e0 && b0 * WB_BLOCK + e0->lo < lo)
		lo = b0 * WB_BLOCK + e0->lo;
	if (e0 && b1 == b0 && b0 * WB_BLOCK + e0->hi > hi)
		hi = b0 * WB_BLOCK + e0->hi;
	if (e1 && b1 * WB_BLOCK + e1->hi > hi)
		hi = b1 * WB_BLOCK + e1->hi;
	for (k = 0; k < ng; k++)
		memcpy(data + (g[k][0] - b0 * WB_BLOCK), gb[k], g[k][1]);
	memcpy(data + (off - b0 * WB_BLOCK), src, len);
	h.dev = fid->dev;
	h.ino = fid->ino;
	h.birth = fid->birth;
	h.off = lo;
	h.len = hi - lo;
	h.nblk = (uint32_t)(b1 - b0 + 1);
	h.time_ns = rec_time_ns();
	err = wl_append(wl, &h, NULL, data, false, &pos, sums);
	if (!err)
		err = wl_apply_data(wl, &h, pos, sums);
out:
	free(data);
	wl_file_put(wl, f);
	return err;
}

ssize_t wblog_write(struct wblog *wl, const struct wb_fid *fid,
		    uint64_t off, const void *buf, size_t len,
		    wblog_fill_fn fill, void *arg, uint64_t *seq)
{
	const char *p = buf;
	struct wl_file *f;
	size_t done = 0;
	unsigned cleans = 0;
	int err = 0;

	if (off + len < off || len > SSIZE_MAX)
		return -EFBIG;
	while (len && !err) {
		/* a record ends at a block boundary within WB_REC_MAX */
		uint64_t lim = WB_REC_MAX - off % WB_BLOCK;
		size_t n = len < lim ? len : (size_t)lim;
		uint64_t g[2][2];
		char *gb[2] = { NULL, NULL };
		unsigned ng, tries;

		uint64_t had[2][2];
		unsigned nhad = 0;

		pthread_mutex_lock(&wl->m);
		/* bytes held of an earlier file of that inode number (another
		 * birth) are never taken in: dropped */
		f = wl_file_find(wl, fid);
		if (f && wl_file_birth(wl, f, fid->birth))
			wl->forget_gen[gen_bucket(fid)]++;
		if (f)
			wl_file_put(wl, f);
		for (tries = 0;; tries++) {
			unsigned k;

			ng = gaps(wl, wl_file_find(wl, fid), off, n, g);
			/* the bytes read for the same gaps are still the
			 * file's own (a gap is not dirty) */
			if (!ng || (ng == nhad &&
				    !memcmp(g, had, ng * sizeof(g[0]))))
				break;
			/* the file's bytes between, read without m */
			err = !fill ? -EINVAL : tries > 8 ? -EAGAIN : 0;
			if (err)
				break;
			memcpy(had, g, sizeof(had));
			nhad = ng;
			pthread_mutex_unlock(&wl->m);
			for (k = 0; k < ng && !err; k++) {
				free(gb[k]);
				gb[k] = malloc(g[k][1]);
				err = gb[k] ? fill(arg, fid, g[k][0], gb[k],
						   g[k][1]) : -ENOMEM;
			}
			pthread_mutex_lock(&wl->m);
			if (err)
				break;
		}
		if (!err)
			err = write_one(wl, fid, off, p, n, g, gb, ng);
		if (!err && seq)
			*seq = wl->appended;
		pthread_mutex_unlock(&wl->m);
		free(gb[0]);
		free(gb[1]);
		/* a full log: its oldest live blocks moved to the head, if
		 * that frees room (then this record again, from its gaps) */
		if (err == -ENOSPC && cleans++ < 8 && wl_clean(wl) > 0) {
			err = 0;
			continue;
		}
		if (err)
			break;
		off += n;
		p += n;
		len -= n;
		done += n;
	}
	/* the records logged stand: a short write, as a full disk gives */
	return done ? (ssize_t)done : err;
}

/*----------------------------------------------------------------*/
/* reading */

ssize_t wblog_overlay(struct wblog *wl, const struct wb_fid *fid,
		      uint64_t off, void *buf, size_t len)
{
	uint64_t end = off + len, b, b0, b1;
	struct wl_file *f;
	ssize_t done = 0;
	char blk[WB_BLOCK];
	int err;

	if (!len || end < off)
		return 0;
	b0 = off / WB_BLOCK;
	b1 = (end - 1) / WB_BLOCK;
	pthread_mutex_lock(&wl->m);
	f = wl_file_find(wl, fid);
	for (b = b0; f && f->nblocks && b <= b1; b++) {
		struct wl_ent *e = wl_ent_find(wl, f, b);
		uint64_t s, t, base = b * WB_BLOCK;

		if (!e)
			continue;
		s = base + e->lo > off ? base + e->lo : off;
		t = base + e->hi < end ? base + e->hi : end;
		if (s >= t)
			continue;
		/* every block of the range tried: the lost ones counted */
		err = wl_read_copy(wl, e, blk);
		if (err)	/* damaged says more than unreadable */
			done = done == -EBADMSG ? done : err;
		if (done < 0)
			continue;
		memcpy((char *)buf + (s - off), blk + (s - base), t - s);
		done += (ssize_t)(t - s);
	}
	pthread_mutex_unlock(&wl->m);
	if (done < 0)
		wl_lost_durable(wl);	/* (the error says enough) */
	return done;
}

uint64_t wblog_dirty_end(struct wblog *wl, const struct wb_fid *fid)
{
	return wblog_dirty_info(wl, fid, NULL);
}

uint64_t wblog_dirty_info(struct wblog *wl, const struct wb_fid *fid,
			  int64_t *mtime_ns)
{
	struct wl_file *f;
	uint64_t end;

	pthread_mutex_lock(&wl->m);
	f = wl_file_find(wl, fid);
	end = f && f->nblocks ? f->end : 0;
	if (mtime_ns)
		*mtime_ns = end ? f->mtime_ns : 0;
	pthread_mutex_unlock(&wl->m);
	return end;
}

uint64_t wblog_dirty_blocks(struct wblog *wl, const struct wb_fid *fid,
			    uint64_t *lost)
{
	struct wl_file *f;
	uint64_t n;

	pthread_mutex_lock(&wl->m);
	f = wl_file_find(wl, fid);
	n = f ? f->nblocks : 0;
	*lost = f ? f->nlost : 0;
	pthread_mutex_unlock(&wl->m);
	return n;
}

/* A TRIM record for fid at size (seal: only if nothing of fid is dirty,
 * else -EAGAIN), made durable. */
static int trim_rec(struct wblog *wl, const struct wb_fid *fid,
		    uint64_t size, bool seal)
{
	struct wl_rec h = { .type = WR_TRIM };
	struct wl_file *f;
	uint64_t pos, seq = 0;
	int err = 0;

	pthread_mutex_lock(&wl->m);
	f = wl_file_find(wl, fid);
	if (f) {
		f->inflight++;	/* kept while waiting */
		while (f->inflight > 1)
			pthread_cond_wait(&wl->cv, &wl->m);
		f->inflight--;
		if (seal && f->nblocks)
			err = f->nlost == f->nblocks ? -EIO : -EAGAIN;
	}
	if (!err && wl->failed) {
		/* nothing more is logged (wblog_fail): the map alone */
		if (!seal && f && f->nblocks && f->end > size) {
			wl_file_trim(wl, f, size);
			wl->forget_gen[gen_bucket(fid)]++;
		}
		if (f)
			wl_file_put(wl, f);
		pthread_mutex_unlock(&wl->m);
		return 0;
	}
	/*
	 * Logged whenever the log holds records, even with nothing of the
	 * file dirty now: records already flushed stay in the log until
	 * the tail passes them, and a replay would otherwise bring their
	 * bytes back past the cut the source has since made.
	 */
	if (!err && wl->rq_n) {
		h.dev = fid->dev;
		h.ino = fid->ino;
		h.off = size;
		h.time_ns = rec_time_ns();
		err = wl_append(wl, &h, NULL, NULL, true, &pos, NULL);
		if (!err && f && f->nblocks && f->end > size) {
			wl_file_trim(wl, f, size);
			wl->forget_gen[gen_bucket(fid)]++;
		}
		if (!err)
			seq = h.seq;
	}
	if (f)
		wl_file_put(wl, f);
	pthread_mutex_unlock(&wl->m);
	return err || !seq ? err : wblog_sync(wl, seq);
}

int wblog_trim(struct wblog *wl, const struct wb_fid *fid, uint64_t size)
{
	return trim_rec(wl, fid, size, false);
}

int wblog_seal(struct wblog *wl, const struct wb_fid *fid)
{
	return trim_rec(wl, fid, 0, true);
}

int64_t wblog_drop(struct wblog *wl, const struct wb_fid *fid)
{
	struct wl_file *f;
	uint64_t bytes = 0;
	size_t i;
	int err;

	pthread_mutex_lock(&wl->m);
	f = wl_file_find(wl, fid);
	for (i = 0; f && i < wl->eh_size; i++) {
		struct wl_ent *e;

		for (e = wl->eh[i]; e; e = e->next)
			if (e->f == f)
				bytes += e->hi - e->lo;
	}
	if (f && f->nblocks)
		wl->flush_errors++;
	pthread_mutex_unlock(&wl->m);
	err = trim_rec(wl, fid, 0, false);
	return err ? err : (int64_t)bytes;
}

/*----------------------------------------------------------------*/
/* flushing */

/* The i-th record from the tail. */
static struct wl_recmem *rec_at(struct wblog *wl, size_t i)
{
	return &wl->rq[(wl->rq_head + i) % wl->rq_cap];
}

/*
 * The oldest record with a dirty block, of the file only if not NULL,
 * else of a file with no run in flight (one file's runs are written one
 * at a time: a run written after a newer one of the same bytes would put
 * the older bytes back); NULL if none.  Under m.
 */
/* A block of r (sequence seq) it holds live, not lost and not in a run
 * being flushed: its entry, or NULL.  Under m. */
static struct wl_ent *free_block(struct wblog *wl, struct wl_recmem *r,
				 uint64_t seq)
{
	uint32_t k;

	for (k = 0; k < r->ndata; k++) {
		struct wl_ent *e = wl_ent_find(wl, r->f, wl_rec_blk(r, k));

		if (e && e->seq == seq && !e->busy && !e->lost)
			return e;
	}
	return NULL;
}

/* f's runs may be handed to owner: none in flight, or all owner's
 * (owner NULL: none in flight). */
static bool may_take(const struct wl_file *f, const void *owner)
{
	return !f->inflight || (owner && f->owner == owner);
}

static struct wl_recmem *oldest_live(struct wblog *wl, uint64_t *seq,
				     const struct wl_file *only,
				     const void *owner, struct wl_ent **e)
{
	size_t i;

	while (wl->dead < wl->rq_n && !rec_at(wl, wl->dead)->live)
		wl->dead++;
	for (i = wl->dead; i < wl->rq_n; i++) {
		struct wl_recmem *r = rec_at(wl, i);

		if (r->live == r->lost ||
		    (only ? r->f != only : !may_take(r->f, owner)))
			continue;
		*e = free_block(wl, r, wl->rq_seq + i);
		if (*e) {
			*seq = wl->rq_seq + i;
			return r;
		}
	}
	return NULL;
}

int wblog_flush_next(struct wblog *wl, int64_t min_age_ns, size_t max,
		     const struct wb_fid *only, struct wb_run *r)
{
	return wblog_flush_next_by(wl, min_age_ns, max, only, NULL, r);
}

/* A neighbour of the run being gathered: dirty, not lost, not in
 * flight. */
static struct wl_ent *free_ent(struct wblog *wl, struct wl_file *f,
			       uint64_t blk)
{
	struct wl_ent *e = wl_ent_find(wl, f, blk);

	return e && !e->busy && !e->lost ? e : NULL;
}

int wblog_flush_next_by(struct wblog *wl, int64_t min_age_ns, size_t max,
			const struct wb_fid *only, const void *owner,
			struct wb_run *r)
{
	struct wl_recmem *rec;
	struct wl_file *of = NULL;
	struct wl_ent *e = NULL;
	uint64_t seq, b, first, last;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (max < WB_BLOCK)
		max = WB_BLOCK;
	pthread_mutex_lock(&wl->m);
	if (only) {
		/* after the file's runs in flight (another's) */
		while ((of = wl_file_find(wl, only)) && !may_take(of, owner))
			pthread_cond_wait(&wl->cv, &wl->m);
		if (!of)
			goto out;
	}
	rec = oldest_live(wl, &seq, of, owner, &e);
	if (!rec || (!only && min_age_ns > 0 &&
		     rec->time_ns > clock_real_ns() - min_age_ns))
		goto out;
	/* the adjacent dirty blocks of the file not in flight, within max */
	first = last = e->blk;
	while ((last - first + 1) * WB_BLOCK < max) {
		struct wl_ent *n = free_ent(wl, e->f, last + 1),
			      *l = wl_ent_find(wl, e->f, last);

		if (!n || l->hi != WB_BLOCK || n->lo != 0)
			break;
		last++;
	}
	while ((last - first + 1) * WB_BLOCK < max && first) {
		struct wl_ent *p = free_ent(wl, e->f, first - 1),
			      *f0 = wl_ent_find(wl, e->f, first);

		if (!p || p->hi != WB_BLOCK || f0->lo != 0)
			break;
		first--;
	}
	r->fid = e->f->fid;
	r->first_blk = first;
	r->nblk = (uint32_t)(last - first + 1);
	r->seq = calloc(r->nblk, sizeof(*r->seq));
	r->buf = malloc((size_t)r->nblk * WB_BLOCK);
	ret = -ENOMEM;
	if (!r->seq || !r->buf)
		goto fail;
	for (b = first; b <= last; b++) {
		struct wl_ent *x = wl_ent_find(wl, e->f, b);

		if (wl_read_copy(wl, x, r->buf + (b - first) * WB_BLOCK)) {
			/* lost now (never written): say whose bytes */
			struct wb_fid fid = e->f->fid;

			free(r->seq);
			free(r->buf);
			memset(r, 0, sizeof(*r));
			r->fid = fid;
			r->off = b * WB_BLOCK + x->lo;
			r->len = x->hi - x->lo;
			ret = 2;
			goto out;
		}
		r->seq[b - first] = x->seq;
		if (b == first)
			r->off = b * WB_BLOCK + x->lo;
		if (b == last)
			r->len = (size_t)(b * WB_BLOCK + x->hi - r->off);
	}
	/* the run's bytes from its first dirty one */
	memmove(r->buf, r->buf + (r->off - first * WB_BLOCK), r->len);
	for (b = first; b <= last; b++)
		wl_ent_find(wl, e->f, b)->busy = true;
	e->f->inflight++;
	e->f->owner = owner;
	ret = 1;
	goto out;
fail:
	free(r->seq);
	free(r->buf);
	memset(r, 0, sizeof(*r));
out:
	pthread_mutex_unlock(&wl->m);
	if (ret == 2)
		wl_lost_durable(wl);
	return ret;
}

void wblog_flush_done(struct wblog *wl, struct wb_run *r, int err)
{
	struct wl_file *f;
	uint32_t i;

	pthread_mutex_lock(&wl->m);
	f = wl_file_find(wl, &r->fid);
	for (i = 0; f && i < r->nblk; i++) {
		struct wl_ent **pp = wl_ent_slot(wl, f, r->first_blk + i);

		/* rewritten or trimmed since: the newer bytes stay */
		if (!*pp || (*pp)->seq != r->seq[i])
			continue;
		if (err)
			(*pp)->busy = false;
		else
			wl_ent_drop(wl, pp);
	}
	if (err)
		wl->flush_errors++;
	else
		wl->flushed += r->len;
	wl->forget_gen[gen_bucket(&r->fid)]++;
	if (f) {
		if (!--f->inflight)
			f->owner = NULL;
		wl_file_put(wl, f);
	}
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
	free(r->seq);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

void wblog_stats(struct wblog *wl, struct wblog_stats *s)
{
	struct wl_recmem *r;
	size_t i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&wl->m);
	s->dirty_bytes = wl->dirty_bytes;
	s->dirty_blocks = wl->nents;
	for (i = 0; i < wl->rq_n; i++)
		if (wl->rq[(wl->rq_head + i) % wl->rq_cap].live)
			s->dirty_records++;
	s->dirty_files = 0;
	for (i = 0; i < wl->fh_size; i++) {
		struct wl_file *f;

		for (f = wl->fh[i]; f; f = f->next)
			s->dirty_files += f->nblocks != 0;
	}
	s->log_used = wl->used * WB_BLOCK;
	s->log_capacity = wl->nblocks * WB_BLOCK;
	s->flushed_bytes = wl->flushed;
	s->flush_errors = wl->flush_errors;
	s->absorbed = wl->absorbed;
	s->cleaned_bytes = wl->cleaned;
	s->lost_bytes = wl->lost;
	s->lost_held_bytes = wl->lost_held;
	s->lost_blocks = wl->lost_blocks;
	s->lost_files = wl->lost_files;
	s->csum_failures = wl->csum_failures;
	s->replayed_records = wl->replayed;
	s->syncs = wl->syncs;
	/* lost blocks wait for nothing: not the oldest dirty data */
	for (i = 0, r = NULL; i < wl->rq_n && !r; i++)
		if (rec_at(wl, i)->live > rec_at(wl, i)->lost)
			r = rec_at(wl, i);
	s->oldest_dirty_ns = r ? r->time_ns : 0;
	pthread_mutex_unlock(&wl->m);
}

uint64_t wblog_flushed(struct wblog *wl)
{
	uint64_t n;

	pthread_mutex_lock(&wl->m);
	n = wl->flushed;
	pthread_mutex_unlock(&wl->m);
	return n;
}

uint64_t wblog_forget_gen(struct wblog *wl, const struct wb_fid *fid)
{
	uint64_t g;

	pthread_mutex_lock(&wl->m);
	g = wl->forget_gen[gen_bucket(fid)];
	pthread_mutex_unlock(&wl->m);
	return g;
}

size_t wblog_lost_files(struct wblog *wl, struct wblog_lost **out)
{
	size_t i, n = 0;

	pthread_mutex_lock(&wl->m);
	*out = calloc(wl->lost_files ? wl->lost_files : 1, sizeof(**out));
	for (i = 0; *out && i < wl->fh_size; i++) {
		struct wl_file *f;

		for (f = wl->fh[i]; f && n < wl->lost_files; f = f->next)
			if (f->nlost)
				(*out)[n++].fid = f->fid;
	}
	/* one walk of the map for the bytes */
	for (i = 0; *out && n && i < wl->eh_size; i++) {
		struct wl_ent *e;

		for (e = wl->eh[i]; e; e = e->next) {
			uint64_t a = e->blk * WB_BLOCK + e->lo,
				 b = e->blk * WB_BLOCK + e->hi;
			size_t k;

			for (k = 0; e->lost && k < n; k++) {
				struct wblog_lost *x = &(*out)[k];

				if (x->fid.dev != e->f->fid.dev ||
				    x->fid.ino != e->f->fid.ino)
					continue;
				if (!x->bytes || a < x->first)
					x->first = a;
				if (b > x->end)
					x->end = b;
				x->bytes += b - a;
				break;
			}
		}
	}
	pthread_mutex_unlock(&wl->m);
	return *out ? n : 0;
}

size_t wblog_files(struct wblog *wl, struct wb_fid **out)
{
	size_t i, n = 0;

	pthread_mutex_lock(&wl->m);
	*out = malloc((wl->nfiles ? wl->nfiles : 1) * sizeof(**out));
	for (i = 0; *out && i < wl->fh_size; i++) {
		struct wl_file *f;

		for (f = wl->fh[i]; f; f = f->next)
			if (f->nblocks)
				(*out)[n++] = f->fid;
	}
	pthread_mutex_unlock(&wl->m);
	return n;
}
