// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Sequential read detection tolerant of reordered requests (see
 * include/hotfs/seqread.h).
 */
#include "hotfs/seqread.h"

void seq_init(struct seqread *s)
{
	atomic_init(&s->end, -1);
	atomic_init(&s->head, -1);
	atomic_init(&s->run, 0);
	atomic_init(&s->mark, 0);
	atomic_init(&s->last_ns, 0);
	atomic_init(&s->big, 0);
	atomic_init(&s->gap_ns, 0);
}

/* *a = max(*a, v) */
static void raise_to(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);

	while (v > cur &&
	       !atomic_compare_exchange_weak_explicit(a, &cur, v,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* How late after the run's last read a read behind its end may come. */
static int64_t reorder_ns(const struct seqread *s)
{
	int64_t g = 2 * (int64_t)atomic_load_explicit(&s->gap_ns,
						       memory_order_relaxed);

	if (g < SEQ_REORDER_NS)
		return SEQ_REORDER_NS;
	return g > SEQ_REORDER_MAX_NS ? SEQ_REORDER_MAX_NS : g;
}

bool seq_note(struct seqread *s, int64_t off, size_t size, int64_t now_ns,
	      uint64_t *run)
{
	int64_t end = atomic_load_explicit(&s->end, memory_order_relaxed);
	int64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t big = atomic_load_explicit(&s->big, memory_order_relaxed);
	int64_t slack = (int64_t)(size > big ? size : big) * SEQ_SLACK;
	int64_t to = off + (int64_t)size;
	int64_t last;
	uint64_t r;
	bool seq;

	r = atomic_load_explicit(&s->run, memory_order_relaxed);
	if (end >= 0 && head >= 0 && off >= head && to <= end &&
	    r == (uint64_t)(end - head)) {
		/* a run of one read, that read again (or part of it): a
		 * random reader's repeat (a hot block read twice in a row
		 * at queue depth), neither a run nor a seek */
		if (run)
			*run = r;
		return false;
	}
	last = atomic_exchange_explicit(&s->last_ns, now_ns,
					memory_order_relaxed);
	seq = end >= 0 && off <= end + slack &&
	      (off >= end || (off + slack >= end &&
			      now_ns - last < reorder_ns(s)));
	if (seq) {
		raise_to(&s->big, size);
		if (now_ns > last)
			raise_to(&s->gap_ns, (uint64_t)(now_ns - last));
		/* not fetch_add(run, size) + size: GCC 12.2 -O2 compiled
		 * that sum here as twice the old value (the unit test's
		 * in_order caught it); r was loaded above */
		while (!atomic_compare_exchange_weak_explicit(
				&s->run, &r, r + size, memory_order_relaxed,
				memory_order_relaxed))
			;
		r += size;
		/* a request taken out of order does not move the end back */
		while (to > end) {
			if (atomic_compare_exchange_weak_explicit(
					&s->end, &end, to, memory_order_relaxed,
					memory_order_relaxed)) {
				atomic_store_explicit(&s->head, off,
						      memory_order_relaxed);
				break;
			}
		}
	} else {
		r = size;
		atomic_store_explicit(&s->run, size, memory_order_relaxed);
		atomic_store_explicit(&s->mark, 0, memory_order_relaxed);
		atomic_store_explicit(&s->big, size, memory_order_relaxed);
		atomic_store_explicit(&s->gap_ns, 0, memory_order_relaxed);
		atomic_store_explicit(&s->end, to, memory_order_relaxed);
		atomic_store_explicit(&s->head, off, memory_order_relaxed);
	}
	if (run)
		*run = r;
	return seq;
}

uint64_t seq_run(const struct seqread *s)
{
	return atomic_load_explicit(&s->run, memory_order_relaxed);
}

uint64_t seq_prefetch_from(const struct seqread *s, uint64_t last)
{
	uint64_t m = atomic_load_explicit(&s->mark, memory_order_relaxed);

	return m > last + 1 ? m : last + 1;
}

void seq_prefetched(struct seqread *s, uint64_t upto)
{
	uint64_t m = atomic_load_explicit(&s->mark, memory_order_relaxed);

	while (upto > m &&
	       !atomic_compare_exchange_weak_explicit(&s->mark, &m, upto,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}
