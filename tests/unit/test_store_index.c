// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the store's compact index: the B+tree of records
 * (src/store_btree.c) against a reference, its memory a record at several
 * fills, running out of memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hotfs/store.h"
#include "src/store_i.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- the B+tree ---- */

struct order {
	uint64_t last, n;
	bool bad;
};

static int check_order(void *arg, uint64_t key, uint64_t *val, uint32_t aux)
{
	struct order *o = arg;

	if ((o->n && key <= o->last) || *val != ~key || aux != (uint32_t)key)
		o->bad = true;
	o->last = key;
	o->n++;
	return BT_KEEP;
}

/* Every key of ref[0..n) is in t with its value, and nothing else. */
static void same_as(struct st_bt *t, const uint64_t *ref, uint64_t n)
{
	struct order o = { 0, 0, false };
	uint64_t i, *val;
	uint32_t *aux;

	assert_int_equal(bt_check(t), 0);
	assert_int_equal(t->n, n);
	for (i = 0; i < n; i++) {
		assert_true(bt_find(t, ref[i], &val, &aux));
		assert_true(*val == ~ref[i]);
		assert_int_equal(*aux, (uint32_t)ref[i]);
	}
	bt_walk(t, 0, UINT64_MAX, check_order, &o);
	assert_false(o.bad);
	assert_int_equal(o.n, n);
}

/* Random inserts (with repeats), finds, deletes, against a sorted array. */
static void test_bt_reference(void **state)
{
	uint64_t n = 0, i, j, *ref = malloc(200000 * sizeof(*ref)), *val;
	struct st_bt t;

	(void)state;
	bt_init(&t);
	assert_false(bt_find(&t, 1, &val, NULL));
	assert_false(bt_del(&t, 1));
	for (i = 0; i < 200000; i++) {
		/* a narrow range: repeats replace */
		uint64_t k = rnd() % 150000 * 7919;
		int rc = bt_put(&t, k, ~k, (uint32_t)k);

		assert_true(rc == 0 || rc == 1);
		if (rc == 0)
			ref[n++] = k;
	}
	qsort(ref, n, sizeof(*ref), cmp_u64);
	for (i = 1; i < n; i++)
		assert_true(ref[i] > ref[i - 1]);
	same_as(&t, ref, n);
	assert_false(bt_find(&t, 1, &val, NULL));
	assert_true(t.height >= 2);	/* inner levels were split too */
	/* delete a random half, then the rest, checking as we go */
	for (i = 0; i < n; i++) {
		if (rnd() % 2)
			continue;
		assert_true(bt_del(&t, ref[i]));
		assert_false(bt_del(&t, ref[i]));
		ref[i] = UINT64_MAX;
	}
	qsort(ref, n, sizeof(*ref), cmp_u64);
	for (j = 0; j < n && ref[j] != UINT64_MAX; j++)
		;
	same_as(&t, ref, j);
	for (i = 0; i < j; i++) {
		assert_true(bt_del(&t, ref[i]));
		if (i % 10007 == 0)
			assert_int_equal(bt_check(&t), 0);
	}
	assert_int_equal(t.n, 0);
	assert_null(t.root);
	assert_int_equal(t.bytes, 0);
	bt_exit(&t);
	free(ref);
}

/* Bytes a key, inserted in random order, at n keys. */
static double bytes_at(uint64_t n, struct st_bt *t)
{
	uint64_t i;

	bt_init(t);
	for (i = 0; i < n; i++) {
		/* a permutation of [0, n): distinct keys, scattered */
		uint64_t k = i * 2654435761u % n;

		assert_int_equal(bt_put(t, k, ~k, (uint32_t)k), 0);
	}
	assert_int_equal(bt_check(t), 0);
	return (double)t->bytes / n;
}

/*
 * The figure of merit: at most 24 bytes a record at any fill, the
 * 262,144 records of a 1 GiB file of 4 KiB blocks and a million
 * included; and after deletions at random (FIFO eviction's pattern:
 * uncorrelated with the keys) leave few records in each leaf.
 */
static void test_bt_bytes_per_record(void **state)
{
	static const uint64_t fills[] = {
		1000, 50000, 131072, 262144, 262145, 500000, 1000000,
	};
	struct st_bt t;
	unsigned f;
	uint64_t i, n;

	(void)state;
	for (f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
		double b = bytes_at(fills[f], &t);

		print_message("%7llu records: %.2f bytes a record\n",
			      (unsigned long long)fills[f], b);
		assert_true(b <= 24.0);
		assert_true(b >= BT_ENTRY);
		bt_exit(&t);
	}
	/* a million, then 90% of them deleted at random */
	n = 1000000;
	bytes_at(n, &t);
	for (i = 0; i < n; i++)
		if (rnd() % 10)
			assert_true(bt_del(&t, i));
	assert_int_equal(bt_check(&t), 0);
	print_message("%7llu left of a million: %.2f bytes a record\n",
		      (unsigned long long)t.n, (double)t.bytes / t.n);
	assert_true((double)t.bytes / t.n <= 24.0);
	/* keys ascending, as a sequential reader leaves them */
	bt_exit(&t);
	bt_init(&t);
	for (i = 0; i < 262144; i++)
		assert_int_equal(bt_put(&t, i, ~i, (uint32_t)i), 0);
	print_message("%7u ascending: %.2f bytes a record\n", 262144,
		      (double)t.bytes / t.n);
	assert_true((double)t.bytes / t.n <= 24.0);
	bt_exit(&t);
}

struct rangedrop {
	uint64_t lo, hi, seen, stop_at;
};

static int drop_odd(void *arg, uint64_t key, uint64_t *val, uint32_t aux)
{
	struct rangedrop *r = arg;

	(void)val;
	(void)aux;
	assert_true(key >= r->lo && key <= r->hi);
	r->seen++;
	if (r->stop_at && r->seen == r->stop_at)
		return BT_STOP;
	return key % 2 ? BT_DROP : BT_KEEP;
}

/* Walks see exactly their range; drops compact; a stop stops. */
static void test_bt_walk(void **state)
{
	struct rangedrop r = { 1000, 5999, 0, 0 };
	uint64_t i, n, *val;
	struct st_bt t;

	(void)state;
	bt_init(&t);
	for (i = 0; i < 20000; i++)
		assert_int_equal(bt_put(&t, i, ~i, (uint32_t)i), 0);
	assert_int_equal(bt_walk(&t, r.lo, r.hi, drop_odd, &r), 2500);
	assert_int_equal(r.seen, 5000);
	assert_int_equal(t.n, 20000 - 2500);
	assert_int_equal(bt_check(&t), 0);
	for (i = 0; i < 20000; i++)
		assert_int_equal(bt_find(&t, i, &val, NULL),
				 i < 1000 || i > 5999 || i % 2 == 0);
	/* a range with nothing in it, and one past the end */
	r = (struct rangedrop){ 1001, 1001, 0, 0 };
	assert_int_equal(bt_walk(&t, 1001, 1001, drop_odd, &r), 0);
	assert_int_equal(r.seen, 0);
	r = (struct rangedrop){ 30000, UINT64_MAX, 0, 0 };
	assert_int_equal(bt_walk(&t, 30000, UINT64_MAX, drop_odd, &r), 0);
	/* stop after 10 entries: the odd ones among them went */
	r = (struct rangedrop){ 10000, 19999, 0, 10 };
	assert_int_equal(bt_walk(&t, 10000, 19999, drop_odd, &r), 4);
	assert_int_equal(r.seen, 10);
	assert_true(bt_find(&t, 10011, &val, NULL));
	assert_false(bt_find(&t, 10007, &val, NULL));
	assert_int_equal(bt_check(&t), 0);
	/* everything, in one walk: the tree empties */
	r = (struct rangedrop){ 0, UINT64_MAX, 0, 0 };
	for (i = 0; i < 20000; i += 2)
		assert_true(bt_del(&t, i));
	n = t.n;	/* odd keys alone are left */
	assert_int_equal(bt_walk(&t, 0, UINT64_MAX, drop_odd, &r), n);
	assert_int_equal(r.seen, n);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.bytes, 0);
	bt_exit(&t);
}

/* Out of memory (a byte limit): -ENOMEM, and the tree stays whole. */
static void test_bt_out_of_memory(void **state)
{
	uint64_t i, n = 0, *val;
	struct st_bt t;
	int rc = 0;

	(void)state;
	bt_init(&t);
	t.limit = 64 * 1024;
	for (i = 0; i < 100000; i++) {
		uint64_t k = rnd();

		rc = bt_put(&t, k, ~k, (uint32_t)k);
		if (rc < 0)
			break;
		n++;
		assert_true(bt_find(&t, k, &val, NULL));
	}
	assert_int_equal(rc, -ENOMEM);
	assert_true(n > 1000);		/* 64 KiB hold a few thousand */
	assert_true(t.bytes <= t.limit);
	assert_int_equal(t.n, n);
	assert_int_equal(bt_check(&t), 0);
	/* failing again changes nothing; more room, more inserts */
	for (i = 0; i < 100; i++)
		assert_true(bt_put(&t, rnd(), 0, 0) <= 1);
	assert_int_equal(bt_check(&t), 0);
	t.limit = 0;
	for (i = 0; i < 10000; i++)
		assert_true(bt_put(&t, rnd(), 1, 1) >= 0);
	assert_int_equal(bt_check(&t), 0);
	bt_exit(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bt_reference),
		cmocka_unit_test(test_bt_bytes_per_record),
		cmocka_unit_test(test_bt_walk),
		cmocka_unit_test(test_bt_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
