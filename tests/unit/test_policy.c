// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the promotion/admission policy (policy.c): counting,
 * saturation, aging, threshold, admission, reinsertion rules, the memory
 * bound, false promotions of a one-time scan, counting from several
 * threads at once, and the counts kept across restarts
 * (src/policy/policy_state.c).
 *
 * Extent hashes here are small integers: the policy mixes them itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/policy.h"
#include "hotfs/policy_state.h"

#define SMALL	1024u		/* counters: period of 512 accesses */

static struct hotfs_policy *mk(unsigned threshold, size_t counters)
{
	struct pol_params pp = { .threshold = threshold,
				 .counters = counters };
	struct hotfs_policy *p = NULL;

	assert_int_equal(pol_new(&pp, &p), 0);
	assert_non_null(p);
	return p;
}

static void test_params(void **state)
{
	struct pol_params pp = { 0 };
	struct hotfs_policy *p = (void *)1;

	(void)state;
	pp.counters = 3000;		/* not a power of two */
	assert_int_equal(pol_new(&pp, &p), -EINVAL);
	assert_null(p);
	pp.counters = 512;		/* too small */
	assert_int_equal(pol_new(&pp, &p), -EINVAL);
	pp.counters = 0;
	pp.threshold = POL_COUNT_MAX + 1;
	assert_int_equal(pol_new(&pp, &p), -EINVAL);
	assert_int_equal(pol_new(NULL, &p), 0);	/* all defaults */
	assert_true(pol_promote(p, 2));
	assert_false(pol_promote(p, 1));
	pol_free(p);
	pol_free(NULL);
}

static void test_counting(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);
	unsigned i;

	(void)state;
	assert_int_equal(pol_estimate(p, 42), 0);
	for (i = 1; i <= 10; i++) {
		assert_int_equal(pol_access(p, 42), i);
		assert_int_equal(pol_estimate(p, 42), i);
	}
	/* others are unaffected */
	assert_int_equal(pol_estimate(p, 43), 0);
	assert_int_equal(pol_access(p, 43), 1);
	assert_int_equal(pol_estimate(p, 42), 10);
	pol_free(p);
}

static void test_hash(void **state)
{
	struct hotfs_key a = { 1, 2 }, b = { 1, 3 };

	(void)state;
	assert_int_equal(pol_hash(&a, 0), pol_hash(&a, 0));
	assert_int_not_equal(pol_hash(&a, 0), pol_hash(&a, 1));
	assert_int_not_equal(pol_hash(&a, 0), pol_hash(&b, 0));
}

static void test_saturation(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);
	unsigned i, c = 0;

	(void)state;
	for (i = 0; i < 100; i++) {
		c = pol_access(p, 7);
		assert_true(c <= POL_COUNT_MAX);
	}
	assert_int_equal(c, POL_COUNT_MAX);
	assert_int_equal(pol_estimate(p, 7), POL_COUNT_MAX);
	pol_free(p);
}

/* Distinct one-time accesses, to push the policy through periods. */
static void filler(struct hotfs_policy *p, uint64_t *next, uint64_t n)
{
	while (n--)
		pol_access(p, (*next)++);
}

static void test_aging(void **state)
{
	struct hotfs_policy *p = mk(0, SMALL);
	uint64_t f = 1000000, per = pol_period(p);
	unsigned e;

	(void)state;
	assert_int_equal(per, SMALL / 2);
	assert_int_equal(pol_agings(p), 0);
	filler(p, &f, 10);
	for (e = 0; e < 10; e++)
		pol_access(p, 5);
	assert_int_equal(pol_estimate(p, 5), 10);
	/* end the first period: sketch 9 -> 4, still in the doorkeeper */
	filler(p, &f, per - 21);
	assert_int_equal(pol_agings(p), 0);
	assert_int_equal(pol_estimate(p, 5), 10);
	filler(p, &f, 1);
	assert_int_equal(pol_agings(p), 1);
	e = pol_estimate(p, 5);
	assert_true(e >= 5 && e <= 6);
	/* a second period: its doorkeeper generation is cleared, 4 -> 2 */
	filler(p, &f, per);
	assert_int_equal(pol_agings(p), 2);
	e = pol_estimate(p, 5);
	assert_true(e >= 2 && e <= 3);
	filler(p, &f, 2 * per);
	assert_int_equal(pol_agings(p), 4);
	assert_true(pol_estimate(p, 5) <= 1);
	/* an access is remembered for at least one period */
	pol_access(p, 6);
	filler(p, &f, per);
	assert_int_equal(pol_access(p, 6), 2);
	pol_free(p);
}

static void test_threshold(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16), *q = mk(3, 1u << 16);
	unsigned i, pass2 = 0;

	(void)state;
	assert_false(pol_promote(p, 0));
	assert_false(pol_promote(p, 1));
	assert_true(pol_promote(p, 2));
	assert_true(pol_promote(p, POL_COUNT_MAX));
	assert_false(pol_promote(q, 2));
	assert_true(pol_promote(q, 3));
	/* a one-time scan promotes nothing; a second pass promotes it all */
	for (i = 0; i < 1000; i++)
		assert_false(pol_promote(p, pol_access(p, 5000 + i)));
	for (i = 0; i < 1000; i++)
		pass2 += pol_promote(p, pol_access(p, 5000 + i));
	assert_int_equal(pass2, 1000);
	/* threshold 3: the third pass */
	for (i = 0; i < 100; i++)
		assert_false(pol_promote(q, pol_access(q, i)));
	for (i = 0; i < 100; i++)
		assert_false(pol_promote(q, pol_access(q, i)));
	for (i = 0; i < 100; i++)
		assert_true(pol_promote(q, pol_access(q, i)));
	pol_free(p);
	pol_free(q);
}

/* False promotions: a long one-time scan against the default sizing. */
static void test_scan_false_promotions(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);
	uint64_t i, n = pol_period(p) - 1, fp = 0;

	(void)state;
	/* a working set first, so the sketch is not empty */
	for (i = 0; i < 2000; i++)
		pol_access(p, i % 500);
	for (i = 0; i < n - 2000; i++)
		fp += pol_promote(p, pol_access(p, 1000000 + i));
	print_message("one-time scan of %llu: %llu promoted\n",
		      (unsigned long long)(n - 2000), (unsigned long long)fp);
	assert_true(fp * 500 <= n);	/* <= 0.2% */
	pol_free(p);
}

static void test_admission(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);
	int i;

	(void)state;
	for (i = 0; i < 5; i++)
		pol_access(p, 1);	/* hot: 5 */
	pol_access(p, 2);		/* seen once: 1 */
	pol_access(p, 4);
	pol_access(p, 4);		/* just promoted: 2 */
	assert_true(pol_admit(p, 1, 2));
	assert_false(pol_admit(p, 2, 1));
	assert_true(pol_admit(p, 4, 3));	/* 3 never seen */
	assert_false(pol_admit(p, 3, 2));
	assert_false(pol_admit(p, 1, 1));	/* ties lose */
	/*
	 * The candidate's count includes the access that made it one: it
	 * must win without it (a loop's next extent is no hotter than the
	 * extent the loop reads after it).
	 */
	assert_false(pol_admit(p, 4, 2));
	/* and beat a victim that was seen by one access more */
	pol_access(p, 4);
	assert_false(pol_admit(p, 4, 2));
	pol_access(p, 4);
	assert_true(pol_admit(p, 4, 2));
	/* admission does not count */
	assert_int_equal(pol_estimate(p, 1), 5);
	assert_int_equal(pol_estimate(p, 2), 1);
	pol_free(p);
}

static void test_keep(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);

	(void)state;
	pol_access(p, 1);
	pol_access(p, 1);		/* 1: count 2 */
	pol_access(p, 2);		/* 2: count 1 */
	assert_string_equal(pol_keep_name(POL_KEEP_DEFAULT),
			    pol_keep_name(POL_KEEP_DEFAULT));
	assert_int_equal(pol_set_keep(p, POL_KEEP_NR), -EINVAL);

	assert_int_equal(pol_set_keep(p, POL_KEEP_NONE), 0);
	assert_false(pol_keep(p, 1, true));
	assert_false(pol_keep(p, 1, false));

	assert_int_equal(pol_set_keep(p, POL_KEEP_HOT), 0);
	assert_true(pol_keep(p, 2, true));
	assert_false(pol_keep(p, 1, false));

	assert_int_equal(pol_set_keep(p, POL_KEEP_FREQ), 0);
	assert_true(pol_keep(p, 1, false));
	assert_false(pol_keep(p, 2, true));

	assert_int_equal(pol_set_keep(p, POL_KEEP_HOT_FREQ), 0);
	assert_true(pol_keep(p, 1, true));
	assert_false(pol_keep(p, 1, false));
	assert_false(pol_keep(p, 2, true));
	pol_free(p);
}

static void test_period(void **state)
{
	struct hotfs_policy *p = mk(0, 0), *q = mk(0, SMALL);
	uint64_t f = 1, per;

	(void)state;
	assert_int_equal(pol_period(p), POL_COUNTERS_DEFAULT / 2);
	assert_int_equal(pol_set_cache(p, 0), -EINVAL);
	assert_int_equal(pol_set_period(p, 0), -EINVAL);
	/* small caches: the floor, so a tree of 128 Ki files still warms */
	assert_int_equal(pol_set_cache(p, 1000), 0);
	assert_int_equal(pol_period(p), POL_PERIOD_MIN);
	/* 8 accesses per cached extent, rounded up to a power of two */
	assert_int_equal(pol_set_cache(p, 20000), 0);
	assert_int_equal(pol_period(p), 262144);
	/* never beyond counters / 2: the doorkeeper's error bound */
	assert_int_equal(pol_set_cache(p, 1u << 30), 0);
	assert_int_equal(pol_period(p), POL_COUNTERS_DEFAULT / 2);
	assert_int_equal(pol_set_cache(p, UINT64_MAX), 0);
	assert_int_equal(pol_period(p), POL_COUNTERS_DEFAULT / 2);
	assert_int_equal(pol_set_period(q, 100), 0);
	assert_int_equal(pol_period(q), SMALL / 2);
	assert_int_equal(pol_sketch_period(q), SMALL / 2);
	/* the sketch halves every 8 accesses per cached extent... */
	assert_int_equal(pol_set_cache(p, 8192), 0);
	assert_int_equal(pol_sketch_period(p), 65536);
	assert_int_equal(pol_period(p), POL_PERIOD_MIN);
	assert_int_equal(pol_set_cache(p, 16384), 0);
	assert_int_equal(pol_sketch_period(p), 131072);
	/* ...but not more often than every counters / 64 accesses */
	assert_int_equal(pol_set_cache(p, 1000), 0);
	assert_int_equal(pol_sketch_period(p), 8192 * 2);
	assert_int_equal(pol_set_cache(p, 1), 0);
	assert_int_equal(pol_sketch_period(p), POL_COUNTERS_DEFAULT / 64);
	assert_int_equal(pol_period(p), POL_PERIOD_MIN);
	assert_int_equal(pol_set_cache(p, 20000), 0);
	assert_int_equal(pol_sketch_period(p), pol_period(p));
	/* the new period takes effect */
	assert_int_equal(pol_set_period(p, POL_PERIOD_MIN), 0);
	per = pol_period(p);
	filler(p, &f, per);
	assert_int_equal(pol_agings(p), 1);
	pol_free(p);
	pol_free(q);
}

/* The sketch halves more often than the doorkeeper forgets. */
static void test_sketch_period(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);
	uint64_t f = 1000000;
	unsigned e, i;

	(void)state;
	assert_int_equal(pol_set_cache(p, 128), 0);
	assert_int_equal(pol_sketch_period(p), 1024);	/* counters / 64 */
	assert_int_equal(pol_period(p), 32768);	/* counters / 2 */
	for (i = 0; i < 10; i++)
		pol_access(p, 5);
	pol_access(p, 6);
	assert_int_equal(pol_estimate(p, 5), 10);
	filler(p, &f, 1024 - 11);
	e = pol_estimate(p, 5);
	assert_true(e >= 5 && e <= 6);		/* 1 + 9 / 2 */
	assert_int_equal(pol_agings(p), 0);
	/* first accesses are still remembered: 6 promotes */
	assert_true(pol_promote(p, pol_access(p, 6)));
	pol_free(p);
}

static void test_victim(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 16);

	(void)state;
	assert_int_equal(pol_set_keep(p, POL_KEEP_HOT), 0);
	assert_int_equal(pol_victim(p), 0);
	assert_false(pol_keep(p, 7, false));
	assert_int_equal(pol_victim(p), 7);
	assert_true(pol_keep(p, 8, true));
	assert_int_equal(pol_victim(p), 7);	/* kept: not a victim */
	/* one let go for lack of room is the victim, hot or not */
	pol_let_go(p, 9);
	assert_int_equal(pol_victim(p), 9);
	assert_false(pol_keep(p, 10, false));
	assert_int_equal(pol_victim(p), 10);
	pol_free(p);
}

static void test_memory(void **state)
{
	struct hotfs_policy *p = mk(0, 0);
	size_t c;

	(void)state;
	/* the bound in src/policy/policy.c's header: 4 * counters + < 256 */
	assert_true(pol_memory(p) >= 4u * POL_COUNTERS_DEFAULT);
	assert_true(pol_memory(p) < 4u * POL_COUNTERS_DEFAULT + 256);
	assert_true(pol_memory(p) <= (4u << 20) + 256);
	assert_int_equal(pol_period(p), POL_COUNTERS_DEFAULT / 2);
	pol_free(p);
	for (c = POL_COUNTERS_MIN; c <= (1u << 22); c <<= 3) {
		p = mk(0, c);
		assert_true(pol_memory(p) >= 4 * c);
		assert_true(pol_memory(p) < 4 * c + 256);
		pol_free(p);
	}
}

#define NTHREADS	8
#define PER_THREAD	5120u

struct hammer {
	struct hotfs_policy *p;
	unsigned id;
};

static void *hammer_fn(void *arg)
{
	struct hammer *hm = arg;
	unsigned i;

	for (i = 0; i < PER_THREAD; i++) {
		if (i % 512 == 0 && i / 512 < 10)
			pol_access(hm->p, 100 + hm->id);	/* own: 10 */
		else if (i == 7)
			pol_access(hm->p, 99);	/* shared */
		else
			pol_access(hm->p, ((uint64_t)hm->id << 32) | i);
	}
	return NULL;
}

static void run_hammer(struct hotfs_policy *p)
{
	pthread_t t[NTHREADS];
	struct hammer hm[NTHREADS];
	unsigned i;

	for (i = 0; i < NTHREADS; i++) {
		hm[i].p = p;
		hm[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, hammer_fn,
						&hm[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

static void test_threads(void **state)
{
	struct hotfs_policy *p = mk(0, 1u << 20);
	unsigned i, e;

	(void)state;
	/* no aging: 40960 accesses in a period of 512 Ki */
	run_hammer(p);
	assert_int_equal(pol_agings(p), 0);
	for (i = 0; i < NTHREADS; i++) {
		e = pol_estimate(p, 100 + i);
		assert_true(e >= 10 && e <= 11);
	}
	e = pol_estimate(p, 99);
	assert_true(e >= 2 && e <= NTHREADS + 1);
	pol_free(p);

	/* every period boundary ages exactly once */
	p = mk(0, SMALL);
	run_hammer(p);
	assert_int_equal(pol_agings(p), NTHREADS * PER_THREAD / (SMALL / 2));
	for (i = 0; i < NTHREADS; i++)
		assert_true(pol_estimate(p, 100 + i) <= POL_COUNT_MAX);
	pol_free(p);
}

/* Counts survive an export and import: a second policy answers as the
 * first did, and keeps aging from where the first was. */
static void test_state_roundtrip(void **state)
{
	struct hotfs_policy *a = mk(2, SMALL), *b = mk(2, SMALL);
	void *buf;
	size_t len;
	uint64_t h;

	(void)state;
	for (h = 1; h <= 100; h++) {
		pol_access(a, h);
		if (h <= 10)		/* 1..10 twice: promoted next time */
			pol_access(a, h);
	}
	assert_int_equal(pol_estimate(b, 5), 0);
	assert_int_equal(pol_state_encode(a, 42, &buf, &len), 0);
	assert_int_equal(pol_state_decode(b, 42, buf, len, (char[64]){ 0 },
					  64), 0);
	munmap(buf, len);
	for (h = 1; h <= 100; h++)
		assert_int_equal(pol_estimate(b, h), pol_estimate(a, h));
	assert_int_equal(pol_estimate(b, 5), 2);
	assert_int_equal(pol_estimate(b, 50), 1);
	/* a file read once before the restart is promoted at its next
	 * read after it */
	assert_true(pol_promote(b, pol_access(b, 50)));
	assert_int_equal(pol_accesses(b), pol_accesses(a) + 1);
	pol_free(a);
	pol_free(b);
}

/* A damaged or foreign counts file changes nothing and says why. */
static void test_state_refused(void **state)
{
	struct hotfs_policy *a = mk(2, SMALL), *b = mk(2, SMALL);
	struct hotfs_policy *big = mk(2, SMALL * 2);
	unsigned char *buf;
	char why[64];
	size_t len;

	(void)state;
	pol_access(a, 7);
	assert_int_equal(pol_state_encode(a, 42, (void **)&buf, &len), 0);
	/* another tag: another source or extent size */
	assert_int_equal(pol_state_decode(b, 43, buf, len, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "another source"));
	/* another sketch size */
	assert_int_equal(pol_state_decode(big, 42, buf, len, why,
					  sizeof(why)), -EINVAL);
	/* one bit flipped in the table, the checksum, the header */
	buf[len / 2] ^= 0x10;
	assert_int_equal(pol_state_decode(b, 42, buf, len, why, sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "checksum mismatch");
	buf[len / 2] ^= 0x10;
	buf[len - 1] ^= 1;
	assert_int_equal(pol_state_decode(b, 42, buf, len, why, sizeof(why)),
			 -EINVAL);
	buf[len - 1] ^= 1;
	buf[0] = 'X';
	assert_int_equal(pol_state_decode(b, 42, buf, len, why, sizeof(why)),
			 -EINVAL);
	buf[0] = 'H';
	/* truncated anywhere */
	assert_int_equal(pol_state_decode(b, 42, buf, len - 8, why,
					  sizeof(why)), -EINVAL);
	assert_int_equal(pol_state_decode(b, 42, buf, 16, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(pol_estimate(b, 7), 0);	/* b untouched */
	/* intact, it loads */
	assert_int_equal(pol_state_decode(b, 42, buf, len, why, sizeof(why)),
			 0);
	assert_int_equal(pol_estimate(b, 7), 1);
	munmap(buf, len);
	pol_free(a);
	pol_free(b);
	pol_free(big);
}

/* Through a directory: saved, loaded, absent, damaged on disk. */
static void test_state_file(void **state)
{
	struct hotfs_policy *a = mk(2, SMALL), *b = mk(2, SMALL);
	char dir[] = "/tmp/hotfs-test-counts.XXXXXX", why[64];
	int dfd, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(pol_state_load(b, dfd, 1, why, sizeof(why)),
			 -ENOENT);
	pol_access(a, 9);
	assert_int_equal(pol_state_save(a, dfd, 1), 0);
	assert_int_equal(pol_state_load(b, dfd, 1, why, sizeof(why)), 0);
	assert_int_equal(pol_estimate(b, 9), 1);
	/* a torn file: shorter than the state */
	fd = openat(dfd, POL_STATE_FILE, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1000), 0);
	close(fd);
	pol_free(b);
	b = mk(2, SMALL);
	assert_int_equal(pol_state_load(b, dfd, 1, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(pol_estimate(b, 9), 0);
	assert_int_equal(unlinkat(dfd, POL_STATE_FILE, 0), 0);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
	pol_free(a);
	pol_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_counting),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_saturation),
		cmocka_unit_test(test_aging),
		cmocka_unit_test(test_threshold),
		cmocka_unit_test(test_scan_false_promotions),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_keep),
		cmocka_unit_test(test_period),
		cmocka_unit_test(test_sketch_period),
		cmocka_unit_test(test_victim),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_state_roundtrip),
		cmocka_unit_test(test_state_refused),
		cmocka_unit_test(test_state_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
