// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Promotion, admission and reinsertion policy: TinyLFU counting.
 *
 * Counting.  Access counts of extents (cached or not) live in one table
 * allocated by pol_new, whatever the size of the slow tree, holding:
 *   - a doorkeeper: two generations of a blocked Bloom filter, 8 bits per
 *     sketch counter each (6 bits set in one 128-bit block per extent);
 *     an extent's first access only sets its doorkeeper bits;
 *   - a count-min sketch: 4 rows of 4-bit counters (saturating at 15);
 *     later accesses increment it conservatively (only the counters equal
 *     to the minimum).
 * An extent's 4 counters and its doorkeeper words of both generations
 * share one 64-byte block, so an access touches one cache line.
 * The estimate is (doorkeeper has it ? 1 : 0) + min of the 4 counters,
 * so 0..16 (POL_COUNT_MAX).
 *
 * Memory bound: with C = counters per row (pol_params.counters, a power of
 * two, default 2^20), the state is exactly 4 * C bytes (2 * C for the
 * sketch, C per doorkeeper generation) plus a struct of under 256 bytes:
 * 4 MiB by default.  Nothing is allocated after pol_new.
 *
 * Aging: every period (P accesses) the older doorkeeper generation is
 * cleared and becomes the current one, and the sketch counters are
 * halved; the sketch is also halved every S accesses in between (S <= P,
 * both powers of two).  P = S = C / 2 (512 Ki accesses by default) until
 * pol_set_cache(p, E) sets them from E, the extents the cache holds:
 * S = 8 * E (TinyLFU's sample size) within [C / 64, P] (C / 64: halving
 * then costs at most four 64-byte blocks per access, amortised), and
 * P = 8 * E within [128 Ki, C / 2].  So an access is remembered for at
 * least one period P and at most two: the second access of a one-time
 * scan longer than that finds nothing (and a tree of more than P files
 * does not warm at its second pass; 128 Ki files at least), while the
 * counts that admission compares halve every S accesses and follow a
 * shifting workload even when the cache is small.
 *
 * Errors: a generation holds at most C / 2 distinct extents, 8 per
 * 128-bit doorkeeper block on average; an extent never seen passes as
 * seen (all 6 of its bits set by others) with probability about 0.1% at
 * the end of such a period, and far less when fewer extents were seen
 * (about 0.0001% at a tenth of it); only then can a one-time access reach
 * the default threshold of 2.  Measured: a one-time scan of C / 2 extents
 * (with counters = 2^16) promotes 0.05% of them, and one of 50,000
 * extents with the default sizing none (tests/unit/test_policy.c,
 * tests/sim --ci).  The sketch overestimates, never underestimates
 * (within a period).
 *
 * Decisions (measured with tests/sim/hotfs_sim against LRU, FIFO and
 * Belady's MIN; numbers in contrib/bench/NOTEBOOK.md, "Policy simulation"):
 *   pol_promote	count >= threshold (default 2: one pass of a scan
 *			never promotes, the second pass does);
 *   pol_admit		estimate(candidate) > estimate(victim) + 1, or + 2
 *			if the victim was seen at all: TinyLFU, but the
 *			candidate's estimate includes the access that made
 *			it one, and without it it must still be hotter, by
 *			one access more than a victim that was seen (the
 *			victim is one sample: with 5/8 of a region kept per
 *			recycling, a margin of one let a cache of 1% churn,
 *			zipf 0.7 85.6% misses and 7.9x its footprint
 *			written against 81.3% and 0.04x).  The victim is
 *			pol_victim() (the last extent pol_keep let go: the
 *			cache's FIFO tail, or, when a recycling declined
 *			none, one it had no room to keep: pol_let_go; a
 *			store full of hot blocks then stops admitting
 *			colder ones, where it churned: fio zipf 1.2 at a
 *			tenth of the file fell from 9x to 4x the disk), or
 *			the next extent the store will drop.  Admission is what makes loops larger
 *			than the cache (git grep of a tree that does not
 *			fit, cp of a big file) get MIN-like hit ratios
 *			instead of LRU's zero, and it writes less to the
 *			SSD than LRU on zipf; the margin makes it work on
 *			loops (with a plain ">" the next extent of a loop
 *			beats the one it evicts, and the cache thrashes);
 *   pol_keep		POL_KEEP_HOT: copy forward the extents hit since
 *			they were written (CLOCK's second chance at region
 *			granularity).  With admission, none (plain FIFO)
 *			and a sketch-frequency rule freeze the cache: a
 *			little better on stationary zipf, 4 points worse
 *			when popularity shifts; hot adapts.
 *
 * Threads: every function may be called from any thread at any time.
 * The tables are words updated with relaxed atomics (fetch_or for the
 * doorkeeper, compare-and-swap for counters): counting takes no lock and
 * never allocates; a lost update under contention costs one count.  The
 * thread whose access completes a period ages the tables (3C/8 word
 * updates in one sequential pass, ~0.6 ms by default, once per S) under
 * p->age_lock, which nothing else takes; readers keep counting meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "hotfs/policy.h"

#define POL_DEPTH		4	/* sketch rows */
#define POL_CTR_MAX		15u	/* 4-bit counters */
/*
 * One 64-byte block (a cache line) per extent: words 0-3 are the sketch
 * rows (16 counters each), words 4-5 and 6-7 the two doorkeeper
 * generations (DK_BITS bits of each 128 per extent).
 */
#define BLOCK_WORDS		8
#define BLOCK_CTRS		16	/* per row */
#define DK_WORD			4	/* generation g: 4 + 2g, 5 + 2g */
#define DK_BITS			6
#define POL_KEEP_DEFAULT_RULE	POL_KEEP_DEFAULT

typedef _Atomic uint64_t aword;

struct hotfs_policy {
	unsigned threshold;		/* __atomic: pol_set_threshold */
	enum pol_keep_rule keep;
	size_t counters;		/* per row, power of two */
	size_t nblocks;			/* counters / BLOCK_CTRS */
	_Atomic uint64_t period;	/* accesses per aging step, 2^n */
	_Atomic uint64_t sk_period;	/* per sketch halving, 2^n <= period */
	aword *tab;			/* nblocks * BLOCK_WORDS */
	_Atomic unsigned cur;		/* doorkeeper generation to set */
	_Atomic uint64_t ops;		/* accesses counted */
	_Atomic uint64_t agings;
	_Atomic uint64_t victim;	/* last extent pol_keep let go */
	pthread_mutex_t age_lock;	/* serialises aging, nothing else */
};

/* Where an extent's bits and counters are. */
struct slots {
	aword *w[POL_DEPTH];		/* sketch words */
	unsigned sh[POL_DEPTH];		/* nibble shifts */
	aword *dk[2];			/* doorkeeper words, per gen. */
	uint64_t dkm[2];		/* doorkeeper masks of the two words */
};

static inline uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser: callers may pass weak hashes */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static inline void locate(const struct hotfs_policy *p, uint64_t h,
			  struct slots *s)
{
	uint64_t m1 = mix64(h), m2 = mix64(h ^ 0x9e3779b97f4a7c15ull);
	aword *blk = p->tab + (m1 & (p->nblocks - 1)) * BLOCK_WORDS;
	int i;

	/* row i: one of the 16 counters of word i */
	for (i = 0; i < POL_DEPTH; i++) {
		s->w[i] = blk + i;
		s->sh[i] = (unsigned)((m1 >> (32 + 4 * i)) & 15) * 4;
	}
	s->dk[0] = blk + DK_WORD;
	s->dk[1] = blk + DK_WORD + 2;
	s->dkm[0] = s->dkm[1] = 0;
	for (i = 0; i < DK_BITS; i++) {
		unsigned b = (unsigned)(m2 >> (7 * i)) & 127;

		s->dkm[b >> 6] |= 1ull << (b & 63);
	}
}

static inline bool dk_has(const struct slots *s, unsigned g)
{
	uint64_t w0 = atomic_load_explicit(&s->dk[g][0], memory_order_relaxed);
	uint64_t w1 = atomic_load_explicit(&s->dk[g][1], memory_order_relaxed);

	return (w0 & s->dkm[0]) == s->dkm[0] && (w1 & s->dkm[1]) == s->dkm[1];
}

static inline void dk_set(const struct slots *s, unsigned g)
{
	if (s->dkm[0])
		atomic_fetch_or_explicit(&s->dk[g][0], s->dkm[0],
					 memory_order_relaxed);
	if (s->dkm[1])
		atomic_fetch_or_explicit(&s->dk[g][1], s->dkm[1],
					 memory_order_relaxed);
}

static inline unsigned ctr(const struct slots *s, int i)
{
	uint64_t w = atomic_load_explicit(s->w[i], memory_order_relaxed);

	return (unsigned)(w >> s->sh[i]) & 15;
}

static inline unsigned sketch_min(const struct slots *s)
{
	unsigned m = ctr(s, 0), v;
	int i;

	for (i = 1; i < POL_DEPTH; i++) {
		v = ctr(s, i);
		if (v < m)
			m = v;
	}
	return m;
}

/* Conservative update: bump the counters at the minimum; the new min. */
static unsigned sketch_inc(const struct slots *s)
{
	unsigned m = sketch_min(s);
	int i;

	if (m >= POL_CTR_MAX)
		return m;
	for (i = 0; i < POL_DEPTH; i++) {
		uint64_t o = atomic_load_explicit(s->w[i],
						  memory_order_relaxed);

		do {
			if (((o >> s->sh[i]) & 15) != m)
				break;	/* above the min, or raced */
		} while (!atomic_compare_exchange_weak_explicit(s->w[i], &o,
				o + (1ull << s->sh[i]), memory_order_relaxed,
				memory_order_relaxed));
	}
	return m + 1;
}

/* Halve the sketch; with dk, also rotate the doorkeeper generations. */
static void age(struct hotfs_policy *p, bool dk)
{
	unsigned old, w;
	size_t b;

	pthread_mutex_lock(&p->age_lock);
	old = 1 - atomic_load_explicit(&p->cur, memory_order_relaxed);
	/* clear the old generation first: then it becomes the current */
	for (b = 0; dk && b < p->nblocks; b++) {
		aword *blk = p->tab + b * BLOCK_WORDS + DK_WORD + 2 * old;

		atomic_store_explicit(&blk[0], 0, memory_order_relaxed);
		atomic_store_explicit(&blk[1], 0, memory_order_relaxed);
	}
	if (dk)
		atomic_store_explicit(&p->cur, old, memory_order_release);
	for (b = 0; b < p->nblocks; b++) {
		for (w = 0; w < POL_DEPTH; w++) {
			aword *x = p->tab + b * BLOCK_WORDS + w;
			uint64_t o = atomic_load_explicit(x,
						memory_order_relaxed);

			while (o && !atomic_compare_exchange_weak_explicit(x,
					&o, (o >> 1) & 0x7777777777777777ull,
					memory_order_relaxed,
					memory_order_relaxed))
				;
		}
	}
	if (dk)
		atomic_fetch_add_explicit(&p->agings, 1, memory_order_relaxed);
	pthread_mutex_unlock(&p->age_lock);
}

static unsigned estimate(struct hotfs_policy *p, const struct slots *s)
{
	unsigned seen = dk_has(s, 0) || dk_has(s, 1);

	(void)p;
	return seen + sketch_min(s);
}

int pol_new(const struct pol_params *pp, struct hotfs_policy **out)
{
	struct hotfs_policy *p;
	size_t c = pp && pp->counters ? pp->counters : POL_COUNTERS_DEFAULT;
	size_t bytes;

	*out = NULL;
	if (c < POL_COUNTERS_MIN || c > POL_COUNTERS_MAX || (c & (c - 1)))
		return -EINVAL;
	if (pp && pp->threshold > POL_COUNT_MAX)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->threshold = pp && pp->threshold ? pp->threshold : 2;
	p->keep = POL_KEEP_DEFAULT_RULE;
	p->counters = c;
	p->nblocks = c / BLOCK_CTRS;
	p->period = c / 2;
	p->sk_period = c / 2;
	bytes = p->nblocks * BLOCK_WORDS * sizeof(uint64_t);
	p->tab = aligned_alloc(64, bytes);
	if (!p->tab)
		goto bad_alloc_tab;
	/* nobody else sees the table yet: plain stores are fine */
	memset((void *)p->tab, 0, bytes);
	pthread_mutex_init(&p->age_lock, NULL);
	*out = p;
	return 0;

bad_alloc_tab:
	free(p);
	return -ENOMEM;
}

void pol_free(struct hotfs_policy *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->age_lock);
	free((void *)p->tab);
	free(p);
}

uint64_t pol_hash(const struct hotfs_key *key, uint32_t extno)
{
	uint8_t b[20];

	memcpy(b, &key->dev, 8);
	memcpy(b + 8, &key->ino, 8);
	memcpy(b + 16, &extno, 4);
	return XXH3_64bits_withSeed(b, sizeof(b), 0x686f746673ull);
}

unsigned pol_access(struct hotfs_policy *p, uint64_t h)
{
	struct slots s;
	unsigned cur, n;
	bool in_cur, seen;
	uint64_t ops;

	locate(p, h, &s);
	cur = atomic_load_explicit(&p->cur, memory_order_acquire);
	in_cur = dk_has(&s, cur);
	seen = in_cur || dk_has(&s, 1 - cur);
	if (!in_cur)
		dk_set(&s, cur);	/* first, or refresh into cur */
	n = 1 + (seen ? sketch_inc(&s) : sketch_min(&s));
	ops = atomic_fetch_add_explicit(&p->ops, 1, memory_order_relaxed) + 1;
	if (!(ops & (atomic_load_explicit(&p->period,
					 memory_order_relaxed) - 1)))
		age(p, true);
	else if (!(ops & (atomic_load_explicit(&p->sk_period,
					      memory_order_relaxed) - 1)))
		age(p, false);
	return n;
}

unsigned pol_estimate(struct hotfs_policy *p, uint64_t h)
{
	struct slots s;

	locate(p, h, &s);
	return estimate(p, &s);
}

bool pol_promote(const struct hotfs_policy *p, unsigned count)
{
	return count >= __atomic_load_n(&p->threshold, __ATOMIC_RELAXED);
}

int pol_set_threshold(struct hotfs_policy *p, unsigned threshold)
{
	if (threshold < 1 || threshold > POL_COUNT_MAX)
		return -EINVAL;
	__atomic_store_n(&p->threshold, threshold, __ATOMIC_RELAXED);
	return 0;
}

bool pol_admit(struct hotfs_policy *p, uint64_t cand, uint64_t victim)
{
	unsigned v = pol_estimate(p, victim);

	/* without the access that made it a candidate, still hotter; by
	 * one more access if the victim was seen at all */
	return pol_estimate(p, cand) > v + (v ? 2 : 1);
}

static bool keep_rule(struct hotfs_policy *p, uint64_t h, bool hot)
{
	switch (p->keep) {
	case POL_KEEP_NONE:
		return false;
	case POL_KEEP_HOT:
		return hot;
	case POL_KEEP_FREQ:
		return pol_estimate(p, h) >=
		       __atomic_load_n(&p->threshold, __ATOMIC_RELAXED);
	case POL_KEEP_HOT_FREQ:
		return hot && pol_estimate(p, h) >=
		       __atomic_load_n(&p->threshold, __ATOMIC_RELAXED);
	default:
		return hot;
	}
}

bool pol_keep(struct hotfs_policy *p, uint64_t h, bool hot)
{
	bool keep = keep_rule(p, h, hot);

	if (!keep)
		atomic_store_explicit(&p->victim, h, memory_order_relaxed);
	return keep;
}

void pol_let_go(struct hotfs_policy *p, uint64_t h)
{
	atomic_store_explicit(&p->victim, h, memory_order_relaxed);
}

uint64_t pol_victim(const struct hotfs_policy *p)
{
	return atomic_load_explicit(&p->victim, memory_order_relaxed);
}

size_t pol_memory(const struct hotfs_policy *p)
{
	return sizeof(*p) + p->nblocks * BLOCK_WORDS * sizeof(uint64_t);
}

int pol_set_keep(struct hotfs_policy *p, enum pol_keep_rule rule)
{
	if ((unsigned)rule >= POL_KEEP_NR)
		return -EINVAL;
	p->keep = rule;
	return 0;
}

const char *pol_keep_name(enum pol_keep_rule rule)
{
	static const char *const names[POL_KEEP_NR] = {
		[POL_KEEP_NONE] = "none",
		[POL_KEEP_HOT] = "hot",
		[POL_KEEP_FREQ] = "freq",
		[POL_KEEP_HOT_FREQ] = "hot+freq",
	};

	return (unsigned)rule < POL_KEEP_NR ? names[rule] : "?";
}

uint64_t pol_period(const struct hotfs_policy *p)
{
	return atomic_load_explicit(&p->period, memory_order_relaxed);
}

uint64_t pol_sketch_period(const struct hotfs_policy *p)
{
	return atomic_load_explicit(&p->sk_period, memory_order_relaxed);
}

/* The power of two >= n, within [lo, hi]. */
static uint64_t pow2_within(uint64_t n, uint64_t lo, uint64_t hi)
{
	uint64_t v = lo;

	while (v < n && v < hi)
		v <<= 1;
	return v > hi ? hi : v;
}

int pol_set_period(struct hotfs_policy *p, uint64_t accesses)
{
	uint64_t per;

	if (!accesses)
		return -EINVAL;
	per = pow2_within(accesses, POL_PERIOD_MIN, p->counters / 2);
	atomic_store_explicit(&p->sk_period, per, memory_order_relaxed);
	atomic_store_explicit(&p->period, per, memory_order_relaxed);
	return 0;
}

int pol_set_cache(struct hotfs_policy *p, uint64_t extents)
{
	uint64_t n, per;

	if (!extents)
		return -EINVAL;
	if (extents > UINT64_MAX / POL_PERIOD_PER_EXTENT)
		extents = UINT64_MAX / POL_PERIOD_PER_EXTENT;
	n = extents * POL_PERIOD_PER_EXTENT;
	per = pow2_within(n, POL_PERIOD_MIN, p->counters / 2);
	atomic_store_explicit(&p->period, per, memory_order_relaxed);
	/* >= C / 64: halving costs at most 4 blocks per access */
	atomic_store_explicit(&p->sk_period,
			      pow2_within(n, p->counters / 64, per),
			      memory_order_relaxed);
	return 0;
}

uint64_t pol_agings(const struct hotfs_policy *p)
{
	return atomic_load_explicit(&p->agings, memory_order_relaxed);
}

/*
 * The state as bytes, little-endian words: counters per row, the
 * doorkeeper generation in use, accesses counted, agings done, then the
 * table.  Taken word by word with relaxed loads while others count: a
 * snapshot that is fuzzy by the accesses counted meanwhile, which is all
 * counts need.
 */
#define POL_STATE_HDR	4	/* words before the table */

size_t pol_state_size(const struct hotfs_policy *p)
{
	return (POL_STATE_HDR + p->nblocks * BLOCK_WORDS) * sizeof(uint64_t);
}

static void put64(unsigned char *b, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *b)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

void pol_export(struct hotfs_policy *p, void *buf)
{
	unsigned char *b = buf;
	size_t i, n = p->nblocks * BLOCK_WORDS;

	/* no aging half done: a halved word beside an unhalved one */
	pthread_mutex_lock(&p->age_lock);
	put64(b, p->counters);
	put64(b + 8, atomic_load_explicit(&p->cur, memory_order_relaxed));
	put64(b + 16, atomic_load_explicit(&p->ops, memory_order_relaxed));
	put64(b + 24, atomic_load_explicit(&p->agings, memory_order_relaxed));
	b += POL_STATE_HDR * 8;
	for (i = 0; i < n; i++)
		put64(b + 8 * i, atomic_load_explicit(&p->tab[i],
						      memory_order_relaxed));
	pthread_mutex_unlock(&p->age_lock);
}

int pol_import(struct hotfs_policy *p, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t i, n = p->nblocks * BLOCK_WORDS;
	uint64_t cur;

	if (len != pol_state_size(p) || get64(b) != p->counters)
		return -EINVAL;
	cur = get64(b + 8);
	if (cur > 1)
		return -EINVAL;
	pthread_mutex_lock(&p->age_lock);
	atomic_store_explicit(&p->cur, (unsigned)cur, memory_order_relaxed);
	atomic_store_explicit(&p->ops, get64(b + 16), memory_order_relaxed);
	atomic_store_explicit(&p->agings, get64(b + 24),
			      memory_order_relaxed);
	b += POL_STATE_HDR * 8;
	for (i = 0; i < n; i++)
		atomic_store_explicit(&p->tab[i], get64(b + 8 * i),
				      memory_order_relaxed);
	pthread_mutex_unlock(&p->age_lock);
	return 0;
}

uint64_t pol_accesses(const struct hotfs_policy *p)
{
	return atomic_load_explicit(&p->ops, memory_order_relaxed);
}
