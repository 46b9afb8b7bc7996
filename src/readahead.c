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

#include <sys/uio.h>

#include <liburing.h>

#include "hotfs/log.h"
#include "hotfs/readahead.h"

#define RA_ALIGN	4096u
/* Most bytes between two extents that one read still takes both across */
#define RA_GAP_MAX	(64u << 10)
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
	/* the read it leads (what its completion's user data names): the
	 * slots it fills, in file order, itself first */
	unsigned ngrp, niov;
	uint32_t grp[RA_MERGE];
	uint32_t rel[RA_MERGE];	/* where each starts in the read */
	uint32_t rlen[RA_MERGE];	/* and how much of it is its own */
	struct iovec iov[2 * RA_MERGE - 1];	/* slots and the gaps */
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
	char *gap;		/* RA_GAP_MAX bytes the gaps between extents
				 * of one read go to (the store's block
				 * checksums: never looked at) */
	struct ra_slot *s;
	_Atomic uint64_t reads, bytes, served, waited, failed, ios;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
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

/*
 * The read lead started completed with res: hand each slot it filled its
 * share (a short read leaves the later ones short: -EIO there).
 */
static void reaped_read(struct hotfs_ra *ra, struct ra_slot *lead, int res)
{
	uint32_t grp[RA_MERGE], rel[RA_MERGE], len[RA_MERGE];
	unsigned i, n;

	pthread_mutex_lock(&ra->m);
	n = lead->ngrp;
	for (i = 0; i < n; i++) {
		grp[i] = lead->grp[i];
		rel[i] = lead->rel[i];
		len[i] = lead->rlen[i];
	}
	pthread_mutex_unlock(&ra->m);
	for (i = 0; i < n; i++) {
		int64_t got = res < 0 ? res : (int64_t)res - rel[i];

		if (got > (int64_t)len[i])
			got = (int64_t)len[i];
		if (res >= 0 && got < 0)
			got = 0;
		reaped(ra, &ra->s[grp[i]], (int)got);
	}
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
		if (d != RA_STOP && (uint32_t)d < ra->nslots)
			reaped_read(ra, &ra->s[(uint32_t)d], res);
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
	/* without it, every extent is read alone */
	ra->gap = aligned_alloc(RA_ALIGN, RA_GAP_MAX);
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
	free(ra->gap);
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
	free(ra->gap);
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

/* The least useful slot nobody reads or holds, its buffer allocated; NULL
 * if there is none.  Under ra->m. */
static struct ra_slot *pick(struct hotfs_ra *ra)
{
	struct ra_slot *v = NULL;
	unsigned i;

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
	if (v && !v->buf) {
		v->buf = aligned_alloc(RA_ALIGN, ra->extent);
		if (!v->buf)
			return NULL;
	}
	return v;
}

/*
 * Start one read of loc[0..n-1] (each after the previous in the data
 * file, adjacent()), each into a slot of its own, the gaps between them
 * into ra->gap; RA_MERGE at most, fewer if slots run out.  How many got
 * one; *lead the slot of loc[0].  Under ra->m.
 */
static unsigned start_run(struct hotfs_ra *ra, const struct hotfs_loc *loc,
			  unsigned n, struct ra_slot **lead)
{
	struct io_uring_sqe *sqe;
	struct ra_slot *l = NULL;
	uint64_t total = 0;
	unsigned k;
	int r;

	*lead = NULL;
	if (ra->broken)
		return 0;
	unsigned niov = 0;

	for (k = 0; k < n && k < RA_MERGE; k++) {
		struct ra_slot *v = pick(ra);
		uint32_t rlen;

		if (!v)
			break;
		rlen = (loc[k].len + RA_ALIGN - 1) / RA_ALIGN * RA_ALIGN;
		v->loc = loc[k];
		v->state = RA_READING;	/* not picked again for this run */
		v->err = 0;
		v->used = ++ra->clock;
		if (!l)
			l = v;
		if (k) {
			uint64_t gap = loc[k].off - (loc[k - 1].off +
						     loc[k - 1].len);

			if (gap) {
				l->iov[niov].iov_base = ra->gap;
				l->iov[niov++].iov_len = gap;
			}
		}
		l->grp[k] = (uint32_t)(v - ra->s);
		l->rel[k] = (uint32_t)(loc[k].off - loc[0].off);
		l->rlen[k] = rlen;
		l->iov[niov].iov_base = v->buf;
		l->iov[niov++].iov_len = rlen;
		total += rlen;
	}
	if (!k)
		return 0;
	l->ngrp = k;
	l->niov = niov;
	sqe = io_uring_get_sqe(&ra->ring);
	if (!sqe) {
		/* cannot happen: one entry per slot, and a read per slot in
		 * flight at most */
		for (unsigned i = 0; i < k; i++)
			ra->s[l->grp[i]].state = RA_EMPTY;
		return 0;
	}
	if (k == 1)
		io_uring_prep_read(sqe, ra->fd, l->buf, l->rlen[0],
				   loc[0].off);
	else
		io_uring_prep_readv(sqe, ra->fd, l->iov, niov, loc[0].off);
	io_uring_sqe_set_data64(sqe, (uint64_t)(l - ra->s));
	do
		r = io_uring_submit(&ra->ring);
	while (r == -EINTR || r == -EAGAIN || r == -EBUSY);
	ra->inflight += k;
	if (r < 1) {
		/* the read stays queued and may still go (with the next
		 * submit), into these slots: they stay RA_READING, and the
		 * ring is not used again */
		hotfs_log(LOG_WARNING, "read-ahead submit failed (%d), off\n",
			  r);
		ra->broken = true;
		return 0;
	}
	atomic_fetch_add(&ra->reads, k);
	atomic_fetch_add(&ra->bytes, total);
	atomic_fetch_add(&ra->ios, 1);
	*lead = l;
	return k;
}

/* Start reading loc into the least useful free slot; under ra->m. */
static struct ra_slot *start(struct hotfs_ra *ra, const struct hotfs_loc *loc)
{
	struct ra_slot *l;

	return start_run(ra, loc, 1, &l) ? l : NULL;
}

/* Does b follow a in the data file closely enough for one read to take
 * both (the store puts each extent's block checksums after it)? */
static bool adjacent(const struct hotfs_ra *ra, const struct hotfs_loc *a,
		     const struct hotfs_loc *b)
{
	return ra->gap && a->len % RA_ALIGN == 0 && ra_eligible(ra, b) &&
	       b->off >= a->off + a->len &&
	       b->off - (a->off + a->len) <= RA_GAP_MAX &&
	       (b->off - (a->off + a->len)) % RA_ALIGN == 0;
}

unsigned ra_prefetch_run(struct hotfs_ra *ra, const struct hotfs_loc *loc,
			 unsigned n)
{
	struct ra_slot *l;
	unsigned i = 0, j, k;

	pthread_mutex_lock(&ra->m);
	while (i < n && ra_eligible(ra, &loc[i])) {
		if (find(ra, &loc[i])) {
			i++;
			continue;
		}
		for (j = i + 1; j < n && j - i < RA_MERGE &&
		     adjacent(ra, &loc[j - 1], &loc[j]) &&
		     !find(ra, &loc[j]); j++)
			;
		k = start_run(ra, &loc[i], j - i, &l);
		i += k;
		if (i < j)
			break;		/* out of slots */
	}
	pthread_mutex_unlock(&ra->m);
	return i;
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
	out->ios = atomic_load(&ra->ios);
}
