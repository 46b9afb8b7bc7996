// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback flusher (see include/hotfs/flush.h): rounds of the
 * writeback log's oldest dirty runs written back to the source, and the
 * thread that runs them.
 *
 * Each run's records are durable in the log before the run is written
 * (write-ahead: a torn write of the source is repaired by the replay).
 * Runs go in batches: each costs the source one pwrite, and each file of
 * a batch one fdatasync, before the log forgets them.  No lock is held
 * across the source's I/O: the log's own lock is taken only to hand the
 * runs out and to take them back.
 *
 * The thread paces itself (wbf_pace: the log's use against dirty_high=
 * and dirty_low=, the source's idleness), samples the flushed total for
 * the rate, and wakes the writers waiting for room after each round.
 *
 * Locks: f->m guards the thread's flags (stop, kicked, want_room), the
 * watermarks, the room generation and the rate's samples; a leaf.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/fileio.h"
#include "hotfs/flush.h"

/* The newest record whose bytes run r holds. */
static uint64_t run_seq(const struct wb_run *r)
{
	uint64_t seq = 0;
	uint32_t i;

	for (i = 0; i < r->nblk; i++)
		if (r->seq[i] > seq)
			seq = r->seq[i];
	return seq;
}

/*
 * A batch: up to WBF_BATCH_RUNS runs (WBF_BATCH_BYTES) handed out to it
 * (wblog_flush_next_by: several of one file, each block once), written
 * in the order they came, then made durable with one fdatasync a file,
 * then given back.  The source's page cache writes the batch's pages out
 * in the file's order, so scattered dirty blocks reach the disk in few
 * large requests, and a file's runs share one flush of the disk.
 */
#define WBF_BATCH_RUNS	64
#define WBF_BATCH_BYTES	(16u << 20)

struct bent {
	struct wb_run r;
	void *cookie;		/* ops->begin's */
	bool begun;		/* written: its bytes may be cached */
	int fd;			/* its file's descriptor (shared) */
	unsigned first;		/* the batch's first run of its file */
	int err;
};

/* Open each run's file once, begin and write each run; the runs whose
 * records are not durable in the log (err) are not written. */
static void batch_write(const struct wb_flush_ops *ops, void *arg,
			struct bent *b, unsigned n, int err)
{
	unsigned i, k;

	for (i = 0; i < n; i++) {
		ssize_t w;

		b[i].first = i;
		b[i].fd = -1;
		for (k = 0; k < i; k++)
			if (b[k].r.fid.dev == b[i].r.fid.dev &&
			    b[k].r.fid.ino == b[i].r.fid.ino) {
				b[i].first = b[k].first;
				break;
			}
		b[i].err = err;
		if (!b[i].err && b[i].first == i) {
			b[i].fd = ops->open(arg, &b[i].r.fid);
			if (b[i].fd < 0)
				b[i].err = b[i].fd;
		} else if (!b[i].err) {
			b[i].err = b[b[i].first].fd < 0 ?
				   b[b[i].first].err : 0;
		}
		if (b[i].err)
			continue;
		/* the mount's own change, one run at a time: the store drops
		 * the run's bytes and keeps the file's others (two in flight
		 * would drop all between them) */
		if (ops->begin)
			b[i].cookie = ops->begin(arg, &b[i].r.fid, b[i].r.off,
						 b[i].r.len);
		w = pwrite_full(b[b[i].first].fd, b[i].r.buf, b[i].r.len,
				(off_t)b[i].r.off);
		b[i].err = w < 0 ? (int)w : 0;
		if (ops->end)
			ops->end(arg, b[i].cookie, &b[i].r.fid, b[i].r.off,
				 b[i].r.len, NULL, b[i].err);
		b[i].begun = !b[i].err;
	}
}

/*
 * Does a later run of the batch write a byte of run i's file that run i
 * wrote?  (A block written again while run i was in flight is a run of
 * its own, taken into the same batch.)  Then run i's bytes are not the
 * source's, under the stamp the batch leaves: cached, they would be
 * dropped again only in memory, by the later run's end, and a crash
 * before the store made that durable would bring them back.
 */
static bool written_later(const struct bent *b, unsigned n, unsigned i)
{
	const struct wb_run *r = &b[i].r;
	unsigned k;

	for (k = i + 1; k < n; k++) {
		const struct wb_run *q = &b[k].r;

		if (q->fid.dev == r->fid.dev && q->fid.ino == r->fid.ino &&
		    q->off < r->off + r->len && r->off < q->off + q->len)
			return true;
	}
	return false;
}

/* One fdatasync a file (a failure fails every run of it), then each run
 * ended and given back in order; the first error, and the bytes. */
static int batch_end(struct wblog *wl, const struct wb_flush_ops *ops,
		     void *arg, struct bent *b, unsigned n, uint64_t *bytes)
{
	unsigned i;
	int first = 0;

	for (i = 0; i < n; i++) {
		int e;

		if (b[i].first != i || b[i].fd < 0)
			continue;
		e = fdatasync(b[i].fd) ? -errno : 0;
		if (close(b[i].fd) && !e && errno != EINTR)
			e = -errno;
		b[i].fd = -1;
		/* the file's runs written before the sync fail with it */
		for (unsigned k = i; e && k < n; k++)
			if (b[k].first == i && !b[k].err)
				b[k].err = e;
	}
	for (i = 0; i < n; i++) {
		struct wb_fid fid = b[i].r.fid;
		size_t len = b[i].r.len;
		int err = b[i].err;

		/* durable on the source: its bytes become cached data, in a
		 * change of the file that changes nothing (unless they are
		 * no longer the source's) */
		if (!err && b[i].begun && ops->begin && ops->end &&
		    !written_later(b, n, i))
			ops->end(arg, ops->begin(arg, &fid, b[i].r.off, len),
				 &fid, b[i].r.off, len, b[i].r.buf, 0);
		wblog_flush_done(wl, &b[i].r, err);
		if (ops->done)
			ops->done(arg, &fid);
		if ((err == -ENOENT || err == -ESTALE) && b[i].first == i) {
			/* gone from the source: nowhere to write it */
			if (ops->lost)
				ops->lost(arg, &fid, err);
			err = wblog_trim(wl, &fid, 0);
		} else if (err == -ENOENT || err == -ESTALE) {
			err = 0;	/* said and trimmed with its first run */
		}
		if (err && !first)
			first = err;
		if (!b[i].err)
			*bytes += len;
	}
	return first;
}

/* Runs of fid (NULL: of any file, min_age_ns old) until none is left,
 * one fails, or max bytes are written; the bytes written in *bytes. */
static int runs(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
		int64_t min_age_ns, const struct wb_fid *only, uint64_t max,
		uint64_t *bytes)
{
	struct bent *b = calloc(WBF_BATCH_RUNS, sizeof(*b));
	int err = 0, rc = 0;

	*bytes = 0;
	if (!b)
		return -ENOMEM;
	while (!err && *bytes < max) {
		uint64_t seq = 0, got = 0;
		unsigned n = 0;

		while (n < WBF_BATCH_RUNS && got < WBF_BATCH_BYTES &&
		       *bytes + got < max &&
		       (rc = wblog_flush_next_by(wl, min_age_ns, WBF_RUN_MAX,
						 only, b, &b[n].r)) >= 1) {
			uint64_t s;

			if (rc == 2) {
				/* a block found lost: never written, said */
				if (ops->damaged)
					ops->damaged(arg, &b[n].r.fid,
						     b[n].r.off, b[n].r.len);
				continue;
			}
			s = run_seq(&b[n].r);

			got += b[n].r.len;
			if (s > seq)
				seq = s;
			b[n].cookie = NULL;
			b[n].begun = false;
			n++;
		}
		if (!n)
			break;
		/*
		 * The runs' records durable in the log first: a write of the
		 * source torn by a power loss is then put right by the
		 * replay, never left mixing the run's bytes with older ones
		 * within a block (the group commit makes this cheap: records
		 * old enough to flush are mostly synced already).
		 */
		batch_write(ops, arg, b, n, wblog_sync(wl, seq));
		err = batch_end(wl, ops, arg, b, n, bytes);
		if (rc != 1)
			break;
	}
	free(b);
	if (err)
		return err;
	return *bytes < max ? (rc < 0 ? rc : 0) : 0;
}

int wbf_round_max(struct wblog *wl, const struct wb_flush_ops *ops,
		  void *arg, int64_t min_age_ns, const struct wb_fid *only,
		  uint64_t max, uint64_t *bytes)
{
	uint64_t done;
	int err, rc;

	err = runs(wl, ops, arg, min_age_ns, only, max, &done);
	/* also what wbf_flush_file left (nothing to do: no write) */
	rc = wblog_release(wl);
	if (!err)
		err = rc;
	if (bytes)
		*bytes = done;
	return err;
}

int wbf_round(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t min_age_ns, uint64_t *bytes)
{
	return wbf_round_max(wl, ops, arg, min_age_ns, NULL, UINT64_MAX,
			     bytes);
}

int64_t wbf_pace(struct wbf_pace *p)
{
	/* used / capacity against a percentage, without rounding */
	unsigned __int128 used = (unsigned __int128)p->used * 100;
	unsigned __int128 high = (unsigned __int128)p->capacity * p->high;
	unsigned __int128 low = (unsigned __int128)p->capacity * p->low;
	int64_t delay = p->delay_ns > 0 ? p->delay_ns : 0;

	if (used >= high)
		p->urgent = true;
	else if (used < low)
		p->urgent = false;
	if (p->urgent || p->want_room)
		return 0;
	if (used >= low || (p->idle_ns >= WBF_IDLE_NS))
		return delay;
	return delay > INT64_MAX - WBF_BUSY_MAX_NS ? INT64_MAX :
	       delay + WBF_BUSY_MAX_NS;
}

void wbf_rate_add(struct wbf_rate *r, int64_t now_ns, uint64_t total)
{
	unsigned last = (r->next + WBF_RATE_SECS) % (WBF_RATE_SECS + 1);

	if (r->n && now_ns - r->t[last] < 1000000000LL)
		return;
	r->t[r->next] = now_ns;
	r->total[r->next] = total;
	r->next = (r->next + 1) % (WBF_RATE_SECS + 1);
	if (r->n < WBF_RATE_SECS + 1)
		r->n++;
}

double wbf_rate_get(const struct wbf_rate *r, int64_t now_ns, uint64_t total)
{
	const int64_t window = WBF_RATE_SECS * 1000000000LL;
	unsigned i;

	unsigned k = 0;

	/* the oldest sample still within the window, else the newest (the
	 * thread busy in one long round took none since) */
	for (i = 0; i < r->n; i++) {
		k = (r->next + WBF_RATE_SECS + 1 - r->n + i) %
		    (WBF_RATE_SECS + 1);
		if (now_ns - r->t[k] <= window)
			break;
	}
	if (!r->n || now_ns <= r->t[k] || total <= r->total[k])
		return 0.0;
	return (double)(total - r->total[k]) * 1e9 /
	       (double)(now_ns - r->t[k]);
}

int wbf_flush_file(struct wblog *wl, const struct wb_flush_ops *ops,
		   void *arg, const struct wb_fid *fid)
{
	uint64_t done;
	unsigned tries;
	int err = 0;

	/* a write landing between the runs and the seal: again */
	for (tries = 0; tries < 8; tries++) {
		err = runs(wl, ops, arg, 0, fid, UINT64_MAX, &done);
		if (!err)
			err = wblog_seal(wl, fid);
		if (err != -EAGAIN)
			break;
	}
	return err;
}

struct wb_flusher {
	pthread_t th;
	pthread_mutex_t m;
	pthread_cond_t cv;	/* the thread's wake-up */
	pthread_cond_t room;	/* a round ended: for writers waiting */
	bool stop, kicked;	/* protected by m */
	unsigned want_room;	/* writers waiting; protected by m */
	uint64_t room_gen;	/* rounds ended; protected by m */
	int room_err;		/* the last round's; protected by m */
	struct wbf_rate rate;	/* protected by m */
	struct wblog *wl;
	const struct wb_flush_ops *ops;
	void *arg;
	int64_t delay_ns, interval_ns;
	unsigned high, low;	/* protected by m */
};

#define BACKOFF_MIN_NS	1000000000LL
#define BACKOFF_MAX_NS	(30 * BACKOFF_MIN_NS)
/* a round writes 1% of the log (at least a run), then looks at the log's
 * use again: an urgent flush stops close to dirty_low */
static uint64_t round_step(uint64_t capacity)
{
	return capacity / 100 > WBF_RUN_MAX ? capacity / 100 : WBF_RUN_MAX;
}

/* The flushed total, for the rate. */
static uint64_t flushed(struct wblog *wl)
{
	struct wblog_stats s;

	wblog_stats(wl, &s);
	return s.flushed_bytes;
}

static void *flusher_main(void *p)
{
	struct wb_flusher *f = p;
	int64_t wait = f->interval_ns, backoff = BACKOFF_MIN_NS;
	struct wbf_pace pace = { .delay_ns = f->delay_ns };

	pthread_mutex_lock(&f->m);
	while (!f->stop) {
		struct wblog_stats s;
		struct timespec ts;
		int64_t until = clock_real_ns() + wait, min_age;
		uint64_t n, step, total;
		int err;

		ts.tv_sec = until / 1000000000LL;
		ts.tv_nsec = until % 1000000000LL;
		while (wait && !f->stop && !f->kicked &&
		       pthread_cond_timedwait(&f->cv, &f->m, &ts) != ETIMEDOUT)
			;
		if (f->stop)
			break;
		f->kicked = false;
		pace.want_room = f->want_room > 0;
		pace.high = f->high;
		pace.low = f->low;
		pthread_mutex_unlock(&f->m);
		wblog_stats(f->wl, &s);
		pace.used = s.log_used;
		pace.capacity = s.log_capacity;
		pace.idle_ns = f->ops->idle ? f->ops->idle(f->arg) : INT64_MAX;
		min_age = wbf_pace(&pace);
		/* a failed log keeps nothing: all of it, however young, in
		 * rounds one after the other */
		if (wblog_failed(f->wl))
			min_age = 0;
		/* every round bounded: its end releases the log's space and
		 * wakes the writers waiting for it, however slow the source
		 * (a round of everything dirty could take minutes) */
		step = round_step(s.log_capacity);
		err = wbf_round_max(f->wl, f->ops, f->arg, min_age, NULL, step,
				    &n);
		total = flushed(f->wl);
		pthread_mutex_lock(&f->m);
		wbf_rate_add(&f->rate, clock_mono_ns(), total);
		f->room_gen++;
		f->room_err = err;
		pthread_cond_broadcast(&f->room);
		if (err) {
			wait = backoff;
			backoff = backoff * 2 < BACKOFF_MAX_NS ? backoff * 2 :
				  BACKOFF_MAX_NS;
		} else {
			/* urgent: the next round at once, while it finds
			 * something to write; any: while the last one wrote
			 * its whole step (there may be more) */
			wait = ((pace.urgent || f->want_room) && n) ||
			       n >= step ? 0 : f->interval_ns;
			backoff = BACKOFF_MIN_NS;
		}
	}
	/* writers still waiting: no more rounds */
	f->room_gen++;
	f->room_err = -ENOSPC;
	pthread_cond_broadcast(&f->room);
	pthread_mutex_unlock(&f->m);
	return NULL;
}

int wbf_start(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t delay_ns, int64_t interval_ns, unsigned high,
	      unsigned low, struct wb_flusher **out)
{
	struct wb_flusher *f = calloc(1, sizeof(*f));
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->wl = wl;
	f->ops = ops;
	f->arg = arg;
	f->delay_ns = delay_ns;
	f->interval_ns = interval_ns > 0 ? interval_ns : 100000000LL;
	f->high = high;
	f->low = low;
	pthread_mutex_init(&f->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_REALTIME);
	pthread_cond_init(&f->cv, &ca);
	pthread_cond_init(&f->room, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&f->th, NULL, flusher_main, f);
	if (err) {
		pthread_cond_destroy(&f->room);
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->m);
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

void wbf_set_watermarks(struct wb_flusher *f, unsigned high, unsigned low)
{
	pthread_mutex_lock(&f->m);
	f->high = high;
	f->low = low;
	f->kicked = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->m);
}

void wbf_kick(struct wb_flusher *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->m);
	f->kicked = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->m);
}

uint64_t wbf_room_gen(struct wb_flusher *f)
{
	uint64_t g;

	pthread_mutex_lock(&f->m);
	g = f->room_gen;
	pthread_mutex_unlock(&f->m);
	return g;
}

int wbf_wait_room(struct wb_flusher *f, uint64_t gen, int64_t timeout_ns)
{
	int64_t until = clock_real_ns() + timeout_ns;
	struct timespec ts = {
		.tv_sec = until / 1000000000LL,
		.tv_nsec = until % 1000000000LL,
	};
	int r = 0;

	pthread_mutex_lock(&f->m);
	f->want_room++;
	f->kicked = true;
	pthread_cond_signal(&f->cv);
	/* a round that ended since gen was taken may have made room: the
	 * writer tries again at once */
	while (f->room_gen == gen && !f->stop && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&f->room, &f->m, &ts);
	f->want_room--;
	if (f->room_gen == gen)
		r = f->stop ? -ENOSPC : -ETIMEDOUT;
	else
		r = f->room_err ? -ENOSPC : 0;
	pthread_mutex_unlock(&f->m);
	return r;
}

int wbf_wait_writer(struct wb_flusher *f, uint64_t gen,
		    struct wbf_waiter *w, int64_t patience_ns)
{
	int64_t now = clock_mono_ns();
	uint64_t moved = wblog_flushed(f->wl);
	int r;

	/* patience anew whenever data reached the source since: a slow
	 * source is waited for, one that takes nothing is not */
	if (!w->deadline || moved != w->flushed) {
		w->deadline = now + patience_ns;
		w->flushed = moved;
	}
	if (now >= w->deadline)
		return -ENOSPC;
	r = wbf_wait_room(f, gen, w->deadline - now);
	return r == -ETIMEDOUT ? 0 : r;
}

double wbf_flush_rate(struct wb_flusher *f)
{
	uint64_t total;
	double r;

	if (!f)
		return 0;
	total = flushed(f->wl);
	pthread_mutex_lock(&f->m);
	r = wbf_rate_get(&f->rate, clock_mono_ns(), total);
	pthread_mutex_unlock(&f->m);
	return r;
}

int wbf_drain(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      unsigned tries)
{
	struct wblog_stats s;
	unsigned failed = 0;

	for (;;) {
		uint64_t n;
		int err = wbf_round(wl, ops, arg, 0, &n);

		wblog_stats(wl, &s);
		/* lost blocks are never written */
		if (s.dirty_blocks == s.lost_blocks)
			return 0;
		if (!err && !n)		/* cannot be: any age goes */
			err = -EAGAIN;
		if (err && ++failed >= tries)
			return err;
	}
}

void wbf_stop(struct wb_flusher *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->m);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->m);
	pthread_join(f->th, NULL);
	pthread_cond_destroy(&f->room);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->m);
	free(f);
}
