// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Read-ahead of cached extents (see include/hotfs/readahead.h).
 *
 * A fixed table of slots, each a buffer for one extent, named by
 * (data file offset, region generation).  Callers submit reads on the
 * shared ring under ra->m (the ring's submission side has one user at a
 * time); one thread waits for completions, marks the slots and wakes the
 * waiters.  Slots are reused least recently used first, those a reader
 * is done with before any; a slot being read or held by a caller is never
 * reused.  The table is small (tens of slots): it is searched linearly.
 *
 * A read is verified by the thread that reaps it, before the slot is
 * ready: readers waiting for it, or coming later, find the checked bytes
 * and spend no time on the checksum.
 *
 * Locks: ra->m, a leaf; the thread calls st_verify (which takes the
 * store's index lock) without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hotfs/clock.h"
#include "hotfs/log.h"
#include "hotfs/readahead.h"

#ifdef HAVE_URING
#include <liburing.h>

#define RA_ALIGN	4096u
#define RA_STOP		UINT64_MAX
/*
 * A slot is for the reader streaming through it, not a cache: once the
 * reader is done with it, or this long after its read, its bytes are not
 * served again (they would be right, being verified, but a reader must
 * find damage on the device, and page cache drops must reach it).
 */
#define RA_TTL_NS	1000000000LL

enum ra_state {
	RA_EMPTY = 0,
	RA_READING,
	RA_READY,
	RA_FAILED,
};

struct ra_slot {
	struct hotfs_loc loc;	/* what it was read for: the slot's name is
				 * loc.off, loc.gen and loc.len */
	enum ra_state state;	/* RA_READY: read and verified */
	int err;		/* RA_FAILED: why */
	unsigned refs;
	uint64_t used;		/* LRU clock; 0 = done with */
	int64_t read_ns;	/* when the read completed */
	char *buf;		/* RA_ALIGN-aligned, ra->extent bytes */
};

struct hotfs_ra {
	struct hotfs_store *st;
	pthread_mutex_t m;
	pthread_cond_t cv;
	struct io_uring ring;
	pthread_t th;
	int fd;			/* the data file, O_DIRECT */
	uint32_t extent;
	unsigned nslots;
	unsigned inflight;	/* protected by m */
	uint64_t clock;		/* protected by m */
	bool broken;		/* the ring failed: every call misses */
	bool exited;		/* the thread is gone (or going) */
	struct ra_slot *s;
	_Atomic uint64_t reads, bytes, served, waited, failed;
};

static int64_t now_ns(void)
{
	return clock_mono_ns();
}

/*
 * Slot s's read completed with res: verify it (the slot is RA_READING, so
 * nobody reuses or serves it meanwhile), then make it ready or failed and
 * wake its waiters.  Called without ra->m.
 */
static void reaped(struct hotfs_ra *ra, struct ra_slot *s, int res)
{
	struct hotfs_loc loc;
	const char *buf;
	int err;

	pthread_mutex_lock(&ra->m);
	loc = s->loc;
	buf = s->buf;
	pthread_mutex_unlock(&ra->m);
	if (res < 0 || (uint32_t)res < loc.len)
		err = res < 0 ? res : -EIO;
	else
		err = st_verify(ra->st, &loc, 0, buf, loc.len, NULL);
	pthread_mutex_lock(&ra->m);
	s->read_ns = now_ns();
	if (!err) {
		s->state = RA_READY;
	} else {
		s->state = RA_FAILED;
		s->err = err;
		atomic_fetch_add(&ra->failed, 1);
		/* the filesystem takes O_DIRECT opens but not these
		 * reads: stop trying */
		if (res == -EINVAL && !ra->broken) {
			hotfs_log(LOG_NOTICE, "read-ahead: O_DIRECT reads "
				  "refused, off\n");
			ra->broken = true;
		}
	}
	ra->inflight--;
	pthread_cond_broadcast(&ra->cv);
	pthread_mutex_unlock(&ra->m);
}

static void *ra_thread(void *arg)
{
	struct hotfs_ra *ra = arg;
	struct io_uring_cqe *cqe;
	bool stop = false, done = false;

	while (!done) {
		uint64_t d;
		int res, r = io_uring_wait_cqe(&ra->ring, &cqe);

		if (r == -EINTR)
			continue;
		if (r < 0) {
			/* cannot happen with a sound ring: fail everything
			 * in flight so that no waiter sleeps for ever */
			pthread_mutex_lock(&ra->m);
			hotfs_log(LOG_WARNING,
				  "read-ahead ring failed (%d), off\n", r);
			ra->broken = true;
			ra->exited = true;
			for (unsigned i = 0; i < ra->nslots; i++)
				if (ra->s[i].state == RA_READING) {
					ra->s[i].state = RA_FAILED;
					ra->s[i].err = -EIO;
				}
			ra->inflight = 0;
			pthread_cond_broadcast(&ra->cv);
			pthread_mutex_unlock(&ra->m);
			break;
		}
		d = io_uring_cqe_get_data64(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&ra->ring, cqe);
		if (d < ra->nslots)
			reaped(ra, &ra->s[d], res);
		pthread_mutex_lock(&ra->m);
		if (d == RA_STOP)
			stop = true;
		done = stop && !ra->inflight;
		if (done)
			ra->exited = true;
		pthread_mutex_unlock(&ra->m);
	}
	return NULL;
}

int ra_new(struct hotfs_ra **out, struct hotfs_store *st, uint32_t extent,
	   size_t budget, char *why, size_t whylen)
{
	struct hotfs_ra *ra;
	char path[64];
	int r;

	*out = NULL;
	ra = calloc(1, sizeof(*ra));
	if (!ra) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	ra->st = st;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", st_data_fd(st));
	ra->fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (ra->fd < 0) {
		r = -errno;
		snprintf(why, whylen, "O_DIRECT: %s", strerror(-r));
		free(ra);
		return r;
	}
	ra->extent = extent;
	ra->nslots = (unsigned)((budget ? budget : RA_BUDGET) / extent);
	if (ra->nslots < RA_MIN_SLOTS)
		ra->nslots = RA_MIN_SLOTS;
	ra->s = calloc(ra->nslots, sizeof(*ra->s));
	if (!ra->s) {
		r = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto bad_fd;
	}
	/* one read per slot in flight at most, plus the stop */
	r = io_uring_queue_init(ra->nslots + 1 < 8 ? 8 : ra->nslots + 1,
				&ra->ring, 0);
	if (r < 0) {
		snprintf(why, whylen, "io_uring: %s", strerror(-r));
		goto bad_slots;
	}
	pthread_mutex_init(&ra->m, NULL);
	pthread_cond_init(&ra->cv, NULL);
	r = -pthread_create(&ra->th, NULL, ra_thread, ra);
	if (r < 0) {
		snprintf(why, whylen, "thread: %s", strerror(-r));
		pthread_cond_destroy(&ra->cv);
		pthread_mutex_destroy(&ra->m);
		io_uring_queue_exit(&ra->ring);
		goto bad_slots;
	}
	*out = ra;
	return 0;
bad_slots:
	free(ra->s);
bad_fd:
	close(ra->fd);
	free(ra);
	return r;
}

void ra_free(struct hotfs_ra *ra)
{
	struct io_uring_sqe *sqe;
	bool posted = false;
	unsigned i;

	if (!ra)
		return;
	pthread_mutex_lock(&ra->m);
	if (!ra->exited) {
		sqe = io_uring_get_sqe(&ra->ring);
		if (sqe) {
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data64(sqe, RA_STOP);
			posted = io_uring_submit(&ra->ring) >= 1;
		}
	}
	if (!ra->exited && !posted) {
		/* no way to wake the thread: leave it, and what it may
		 * still read into, alone (the process is exiting) */
		pthread_mutex_unlock(&ra->m);
		hotfs_log(LOG_WARNING, "read-ahead: could not stop its "
			  "thread\n");
		pthread_detach(ra->th);
		return;
	}
	pthread_mutex_unlock(&ra->m);
	pthread_join(ra->th, NULL);
	io_uring_queue_exit(&ra->ring);
	for (i = 0; i < ra->nslots; i++)
		free(ra->s[i].buf);
	free(ra->s);
	close(ra->fd);
	pthread_cond_destroy(&ra->cv);
	pthread_mutex_destroy(&ra->m);
	free(ra);
}

bool ra_eligible(const struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	return loc->off % RA_ALIGN == 0 && loc->len && loc->len <= ra->extent;
}

/* Is s a slot no reader should be served from again?  Under ra->m. */
static bool expired(const struct ra_slot *s, int64_t now)
{
	return s->state == RA_EMPTY ||
	       (s->state != RA_READING && !s->refs &&
		now - s->read_ns > RA_TTL_NS);
}

static struct ra_slot *find(struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	int64_t now = now_ns();
	unsigned i;

	if (ra->broken)
		return NULL;
	for (i = 0; i < ra->nslots; i++) {
		struct ra_slot *s = &ra->s[i];

		if (s->loc.off == loc->off && s->loc.gen == loc->gen &&
		    s->loc.len == loc->len) {
			if (!expired(s, now))
				return s;
			s->state = RA_EMPTY;
		}
	}
	return NULL;
}

/* Start reading loc into the least useful free slot; under ra->m. */
static struct ra_slot *start(struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	struct io_uring_sqe *sqe;
	struct ra_slot *v = NULL;
	uint32_t rlen;
	unsigned i;
	int r;

	if (ra->broken)
		return NULL;
	for (i = 0; i < ra->nslots; i++) {
		struct ra_slot *s = &ra->s[i];

		if (s->refs || s->state == RA_READING)
			continue;
		if (s->state == RA_EMPTY) {
			v = s;
			break;
		}
		if (!v || s->used < v->used)
			v = s;
	}
	if (!v)
		return NULL;
	if (!v->buf) {
		v->buf = aligned_alloc(RA_ALIGN, ra->extent);
		if (!v->buf)
			return NULL;
	}
	sqe = io_uring_get_sqe(&ra->ring);
	if (!sqe)
		return NULL;
	rlen = (loc->len + RA_ALIGN - 1) / RA_ALIGN * RA_ALIGN;
	io_uring_prep_read(sqe, ra->fd, v->buf, rlen, loc->off);
	io_uring_sqe_set_data64(sqe, (uint64_t)(v - ra->s));
	do
		r = io_uring_submit(&ra->ring);
	while (r == -EINTR || r == -EAGAIN || r == -EBUSY);
	v->loc = *loc;
	v->state = RA_READING;
	v->err = 0;
	v->used = ++ra->clock;
	ra->inflight++;
	if (r < 1) {
		/* the read stays queued and may still go (with the next
		 * submit), into this slot: it stays RA_READING, and the
		 * ring is not used again */
		hotfs_log(LOG_WARNING, "read-ahead submit failed (%d), off\n",
			  r);
		ra->broken = true;
		return NULL;
	}
	atomic_fetch_add(&ra->reads, 1);
	atomic_fetch_add(&ra->bytes, rlen);
	return v;
}

bool ra_prefetch(struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	bool ok = true;

	if (!ra_eligible(ra, loc))
		return false;
	pthread_mutex_lock(&ra->m);
	if (!find(ra, loc))
		ok = start(ra, loc) != NULL;
	pthread_mutex_unlock(&ra->m);
	return ok;
}

int ra_get(struct hotfs_ra *ra, const struct hotfs_loc *loc,
	   struct ra_ref *ref)
{
	struct ra_slot *s;
	int r;

	ref->slot = NULL;
	ref->data = NULL;
	if (!ra_eligible(ra, loc))
		return -EINVAL;
	pthread_mutex_lock(&ra->m);
	s = find(ra, loc);
	if (!s)
		s = start(ra, loc);
	if (!s) {
		pthread_mutex_unlock(&ra->m);
		return -EBUSY;
	}
	s->refs++;
	if (s->state == RA_READING)
		atomic_fetch_add(&ra->waited, 1);
	while (s->state == RA_READING && !ra->broken)
		pthread_cond_wait(&ra->cv, &ra->m);
	if (s->state == RA_READING) {
		r = -EIO;
		goto drop;
	}
	if (s->state != RA_READY) {
		r = s->err ? s->err : -EIO;
		goto drop;
	}
	s->used = ++ra->clock;
	pthread_mutex_unlock(&ra->m);
	atomic_fetch_add(&ra->served, 1);
	ref->slot = s;
	ref->data = s->buf;
	return 0;
drop:
	s->refs--;
	pthread_mutex_unlock(&ra->m);
	return r;
}

void ra_put(struct hotfs_ra *ra, struct ra_ref *ref, bool done)
{
	struct ra_slot *s = ref->slot;

	if (!s)
		return;
	pthread_mutex_lock(&ra->m);
	s->refs--;
	if (done) {
		s->used = 0;
		if (!s->refs)
			s->state = RA_EMPTY;
	}
	pthread_mutex_unlock(&ra->m);
	ref->slot = NULL;
	ref->data = NULL;
}

void ra_get_counts(struct hotfs_ra *ra, struct ra_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (!ra)
		return;
	out->reads = atomic_load(&ra->reads);
	out->bytes = atomic_load(&ra->bytes);
	out->served = atomic_load(&ra->served);
	out->waited = atomic_load(&ra->waited);
	out->failed = atomic_load(&ra->failed);
}

#else	/* built without io_uring: no read-ahead of cached extents */

int ra_new(struct hotfs_ra **out, struct hotfs_store *st, uint32_t extent,
	   size_t budget, char *why, size_t whylen)
{
	(void)st;
	(void)extent;
	(void)budget;
	*out = NULL;
	snprintf(why, whylen, "built without io_uring");
	return -ENOSYS;
}

void ra_free(struct hotfs_ra *ra)
{
	(void)ra;
}

bool ra_eligible(const struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	(void)ra;
	(void)loc;
	return false;
}

bool ra_prefetch(struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	(void)ra;
	(void)loc;
	return false;
}

int ra_get(struct hotfs_ra *ra, const struct hotfs_loc *loc,
	   struct ra_ref *ref)
{
	(void)ra;
	(void)loc;
	(void)ref;
	return -ENOSYS;
}

void ra_put(struct hotfs_ra *ra, struct ra_ref *ref, bool done)
{
	(void)ra;
	(void)ref;
	(void)done;
}

void ra_get_counts(struct hotfs_ra *ra, struct ra_counts *out)
{
	(void)ra;
	memset(out, 0, sizeof(*out));
}

#endif
