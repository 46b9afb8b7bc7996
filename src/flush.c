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
 * Locks: f->m guards the thread's flags (stop, kicked); a leaf.
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
		ops->end(arg, cookie, &r->fid, r->off, r->len, err);
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

/* Runs of fid (NULL: of any file, min_age_ns old) until none is left or
 * one fails; the bytes written in *bytes. */
static int runs(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
		int64_t min_age_ns, const struct wb_fid *only,
		uint64_t *bytes)
{
	struct wb_run r;
	int err = 0, rc;

	*bytes = 0;
	while ((rc = wblog_flush_next(wl, min_age_ns, WBF_RUN_MAX, only,
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
	return rc;
}

int wbf_round(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t min_age_ns, uint64_t *bytes)
{
	uint64_t done;
	int err, rc;

	err = runs(wl, ops, arg, min_age_ns, NULL, &done);
	/* also what wbf_flush_file left (nothing to do: no write) */
	rc = wblog_release(wl);
	if (!err)
		err = rc;
	if (bytes)
		*bytes = done;
	return err;
}

int wbf_flush_file(struct wblog *wl, const struct wb_flush_ops *ops,
		   void *arg, const struct wb_fid *fid)
{
	uint64_t done;
	unsigned tries;
	int err = 0;

	/* a write landing between the runs and the seal: again */
	for (tries = 0; tries < 8; tries++) {
		err = runs(wl, ops, arg, 0, fid, &done);
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
	pthread_cond_t cv;
	bool stop, kicked;	/* protected by m */
	struct wblog *wl;
	const struct wb_flush_ops *ops;
	void *arg;
	int64_t delay_ns, interval_ns;
};

#define BACKOFF_MIN_NS	1000000000LL
#define BACKOFF_MAX_NS	(30 * BACKOFF_MIN_NS)

static void *flusher_main(void *p)
{
	struct wb_flusher *f = p;
	int64_t wait = f->interval_ns, backoff = BACKOFF_MIN_NS;

	pthread_mutex_lock(&f->m);
	while (!f->stop) {
		struct timespec ts;
		int64_t until = clock_real_ns() + wait;
		int err;

		ts.tv_sec = until / 1000000000LL;
		ts.tv_nsec = until % 1000000000LL;
		while (!f->stop && !f->kicked &&
		       pthread_cond_timedwait(&f->cv, &f->m, &ts) != ETIMEDOUT)
			;
		if (f->stop)
			break;
		f->kicked = false;
		pthread_mutex_unlock(&f->m);
		err = wbf_round(f->wl, f->ops, f->arg, f->delay_ns, NULL);
		pthread_mutex_lock(&f->m);
		if (err) {
			wait = backoff;
			backoff = backoff * 2 < BACKOFF_MAX_NS ? backoff * 2 :
				  BACKOFF_MAX_NS;
		} else {
			wait = f->interval_ns;
			backoff = BACKOFF_MIN_NS;
		}
	}
	pthread_mutex_unlock(&f->m);
	return NULL;
}

int wbf_start(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t delay_ns, int64_t interval_ns, struct wb_flusher **out)
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
	pthread_mutex_init(&f->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_REALTIME);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&f->th, NULL, flusher_main, f);
	if (err) {
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
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->m);
	free(f);
	return err;
}
