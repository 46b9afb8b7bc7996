// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback flusher (see include/hotfs/flush.h): rounds of the
 * writeback log's oldest dirty runs written back to the source, and the
 * thread that runs them.
 *
 * Each run's records are durable in the log before the run is written
 * (write-ahead: a torn write of the source is repaired by the replay).
 * Each run costs the source one pwrite and one fdatasync before the log
 * forgets it (a later step shares the fdatasync between the runs of a
 * file in a round).  No lock is held across the source's I/O: the log's
 * own lock is taken only to hand the run out and to take it back.
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
#include <stdlib.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/fileio.h"
#include "hotfs/flush.h"

/* Write run r to the source and make it durable there: 0 or -errno. */
static int write_run(const struct wb_flush_ops *ops, void *arg,
		     const struct wb_run *r)
{
	void *cookie = NULL;
	ssize_t n;
	int fd, err;

	fd = ops->open(arg, &r->fid);
	if (fd < 0)
		return fd;
	if (ops->begin)
		cookie = ops->begin(arg, &r->fid, r->off, r->len);
	n = pwrite_full(fd, r->buf, r->len, (off_t)r->off);
	err = n < 0 ? (int)n : 0;
	if (!err && fdatasync(fd))
		err = -errno;
	if (ops->end)
		ops->end(arg, cookie, &r->fid, r->off, r->len,
			 err ? NULL : r->buf, err);
	if (close(fd) && !err && errno != EINTR)
		err = -errno;
	return err;
}

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

/* Runs of fid (NULL: of any file, min_age_ns old) until none is left,
 * one fails, or max bytes are written; the bytes written in *bytes. */
static int runs(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
		int64_t min_age_ns, const struct wb_fid *only, uint64_t max,
		uint64_t *bytes)
{
	struct wb_run r;
	int err = 0, rc;

	*bytes = 0;
	while (*bytes < max &&
	       (rc = wblog_flush_next(wl, min_age_ns, WBF_RUN_MAX, only,
				      &r)) == 1) {
		struct wb_fid fid = r.fid;
		size_t len = r.len;

		/* the run's records durable in the log first: a write of the
		 * source torn by a power loss is then put right by the replay,
		 * never left mixing the run's bytes with older ones within a
		 * block (the group commit makes this cheap: records old enough
		 * to flush are mostly synced already) */
		err = wblog_sync(wl, run_seq(&r));
		if (!err)
			err = write_run(ops, arg, &r);
		wblog_flush_done(wl, &r, err);
		if (ops->done)
			ops->done(arg, &fid);
		if (err == -ENOENT || err == -ESTALE) {
			/* gone from the source: nowhere to write it */
			if (ops->lost)
				ops->lost(arg, &fid, err);
			err = wblog_trim(wl, &fid, 0);
		}
		if (err)
			return err;
		*bytes += len;
	}
	return *bytes < max ? rc : 0;
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
/* an urgent round writes 1% of the log (at least a run), then looks at
 * the log's use again: the flush stops close to dirty_low */
static uint64_t urgent_step(uint64_t capacity)
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
		step = pace.urgent || pace.want_room ?
		       urgent_step(s.log_capacity) : UINT64_MAX;
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
			 * something to write */
			wait = (pace.urgent || f->want_room) && n ? 0 :
			       f->interval_ns;
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

void wbf_kick(struct wb_flusher *f)
{
	pthread_mutex_lock(&f->m);
	f->kicked = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->m);
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
	r = f->room_gen == gen || f->room_err ? -ENOSPC : 0;
	pthread_mutex_unlock(&f->m);
	return r;
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

int wbf_stop(struct wb_flusher *f, bool drain, unsigned tries)
{
	struct wblog_stats s;
	int err = 0;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->m);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->m);
	pthread_join(f->th, NULL);
	if (drain) {
		unsigned failed = 0;

		for (;;) {
			uint64_t n;

			err = wbf_round(f->wl, f->ops, f->arg, 0, &n);
			wblog_stats(f->wl, &s);
			if (!err && !s.dirty_blocks)
				break;
			if (!err && !n)		/* cannot be: any age goes */
				err = -EAGAIN;
			if (err && ++failed >= tries)
				break;
		}
	}
	pthread_cond_destroy(&f->room);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->m);
	free(f);
	return err;
}
