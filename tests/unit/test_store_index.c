// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the store's compact index: the B+tree of records
 * (src/store/store_btree.c) against a reference, its memory a record at several
 * fills, running out of memory; and the index over it (store_index.c):
 * insert, lookup, hot mark, stamps, delete, range drops, the file table's
 * growth and limit, many files and many records of one file, the packed
 * location at its limits.
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
#include "src/store/store_i.h"
#include "unit_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return ut_rnd(&rng);
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
	/* a full cache's steady state: the oldest 10% go (FIFO eviction),
	 * as many new keys come, ten times over */
	bt_exit(&t);
	{
		uint64_t *fifo = malloc(262144 * 11 * sizeof(*fifo));
		uint64_t head = 0, tail = 0, r;

		bt_init(&t);
		while (tail < 262144) {
			uint64_t k = rnd() >> 8;

			if (bt_put(&t, k, ~k, (uint32_t)k) == 0)
				fifo[tail++] = k;
		}
		for (r = 0; r < 10; r++) {
			for (i = 0; i < 26214; i++)
				assert_true(bt_del(&t, fifo[head++]));
			for (i = 0; i < 26214;) {
				uint64_t k = rnd() >> 8;

				if (bt_put(&t, k, ~k, (uint32_t)k) == 0) {
					fifo[tail++] = k;
					i++;
				}
			}
		}
		assert_int_equal(t.n, 262144);
		assert_int_equal(bt_check(&t), 0);
		print_message("%7llu after ten FIFO turnovers of 10%%: %.2f "
			      "bytes a record\n", (unsigned long long)t.n,
			      (double)t.bytes / t.n);
		assert_true((double)t.bytes / t.n <= 24.0);
		free(fifo);
	}
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

/* ---- the index ---- */

#define EXT	(256u * 1024)
#define RSIZE	(16u << 20)

static int setup(void **state)
{
	struct hotfs_store *st = calloc(1, sizeof(*st));

	assert_non_null(st);
	st->g.extent = EXT;
	st->g.rsize = RSIZE;
	assert_int_equal(idx_init(st, 1u << 20, 1024), 0);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct hotfs_store *st = *state;

	assert_int_equal(bt_check(&st->bt), 0);
	idx_exit(st);
	free(st);
	return 0;
}

static struct st_rec rec_of(uint64_t dev, uint64_t ino, uint32_t rec,
			    uint64_t stamp, uint32_t region, uint32_t off,
			    uint32_t len)
{
	struct st_rec r;

	memset(&r, 0, sizeof(r));
	r.dev = dev;
	r.ino = ino;
	r.rec = rec;
	r.stamp = stamp;
	r.region = region;
	r.off = off;
	r.len = len;
	r.csum = (uint32_t)(ino * 31 + rec);
	return r;
}

/* Insert, look up (hot mark), replace, stamps. */
static void test_idx_insert_lookup(void **state)
{
	struct hotfs_store *st = *state;
	struct st_rec r = rec_of(7, 42, 3, 0xabc, 5, 4096, 65536), o;
	uint64_t s;

	assert_int_equal(idx_lookup(st, 7, 42, 3, 0xabc, &o), -ENOENT);
	assert_false(idx_file_stamp(st, 7, 42, NULL));
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_records(st), 1);
	assert_int_equal(st->nbytes, 65536);
	/* not hot until looked up */
	assert_int_equal(idx_get(st, 7, 42, 3, &o), 0);
	assert_false(o.hot);
	assert_int_equal(idx_lookup(st, 7, 42, 3, 0xabc, &o), 0);
	assert_int_equal(o.dev, 7);
	assert_int_equal(o.ino, 42);
	assert_int_equal(o.rec, 3);
	assert_int_equal(o.region, 5);
	assert_int_equal(o.off, 4096);
	assert_int_equal(o.len, 65536);
	assert_int_equal(o.csum, r.csum);
	assert_int_equal(idx_get(st, 7, 42, 3, &o), 0);
	assert_true(o.hot);
	/* other records, other devices, other inodes: misses */
	assert_int_equal(idx_lookup(st, 7, 42, 4, 0xabc, &o), -ENOENT);
	assert_int_equal(idx_lookup(st, 8, 42, 3, 0xabc, &o), -ENOENT);
	assert_int_equal(idx_lookup(st, 7, 43, 3, 0xabc, &o), -ENOENT);
	/* another stamp: found, but stale */
	assert_int_equal(idx_lookup(st, 7, 42, 3, 0xabd, &o), -ESTALE);
	/* replacing moves it, clears hot, keeps the count */
	r.off = 8192;
	r.len = 100;
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_records(st), 1);
	assert_int_equal(st->nbytes, 100);
	assert_int_equal(idx_get(st, 7, 42, 3, &o), 0);
	assert_false(o.hot);
	assert_int_equal(o.off, 8192);
	/* a block record beside the extent */
	r = rec_of(7, 42, ST_REC_BLOCK | 64, 0xabc, 6, 512, 4096);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_file_records(st, 7, 42), 2);
	/* a record of a new stamp drops the file's others */
	r = rec_of(7, 42, 9, 0xdef, 6, 1024, 10);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_file_records(st, 7, 42), 1);
	assert_true(idx_file_stamp(st, 7, 42, &s));
	assert_int_equal(s, 0xdef);
	assert_int_equal(idx_get(st, 7, 42, 3, &o), -ENOENT);
	assert_int_equal(st->nbytes, 10);
	assert_int_equal(idx_drop_other_stamps(st, 7, 42, 0xdef), 0);
	assert_int_equal(idx_drop_other_stamps(st, 7, 42, 0x1), 1);
	assert_false(idx_file_stamp(st, 7, 42, NULL));
	assert_int_equal(st->nfiles, 0);
	assert_int_equal(st->nbytes, 0);
}

/* Delete only the record at the given place; the file goes with its
 * last record, and its id is reused. */
static void test_idx_delete(void **state)
{
	struct hotfs_store *st = *state;
	struct st_rec r = rec_of(1, 10, 0, 1, 2, 0, 4096), o;

	assert_int_equal(idx_put(st, &r), 0);
	r.rec = 1;
	r.off = 4096;
	assert_int_equal(idx_put(st, &r), 0);
	assert_false(idx_del_at(st, 1, 10, 0, 2, 4096));	/* elsewhere */
	assert_false(idx_del_at(st, 1, 10, 0, 3, 0));
	assert_false(idx_del_at(st, 1, 11, 0, 2, 0));
	assert_true(idx_del_at(st, 1, 10, 0, 2, 0));
	assert_false(idx_del_at(st, 1, 10, 0, 2, 0));
	assert_int_equal(idx_get(st, 1, 10, 0, &o), -ENOENT);
	assert_int_equal(idx_get(st, 1, 10, 1, &o), 0);
	assert_int_equal(st->nfiles, 1);
	assert_true(idx_del_at(st, 1, 10, 1, 2, 4096));
	assert_int_equal(st->nfiles, 0);
	assert_int_equal(idx_records(st), 0);
	assert_int_equal(st->nbytes, 0);
	/* the freed id is the next one given out */
	r = rec_of(1, 99, 0, 1, 2, 0, 4096);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(st->file_hwm, 1);
}

/* Range drops: extents [first, first + count) and the blocks within,
 * nothing of the neighbours; restamping keeps the rest. */
static void test_idx_range_drop_restamp(void **state)
{
	struct hotfs_store *st = *state;
	uint32_t bpe = EXT / ST_BLOCK, x, b;
	struct st_rec r, o;
	uint64_t s;

	/* extents 0..9 and the blocks of extents 0..9, of two files */
	for (x = 0; x < 10; x++) {
		r = rec_of(1, 5, x, 77, 1, x * EXT, EXT);
		assert_int_equal(idx_put(st, &r), 0);
		r = rec_of(1, 6, x, 77, 1, x * EXT, EXT);
		assert_int_equal(idx_put(st, &r), 0);
	}
	for (b = 0; b < 10 * bpe; b += 3) {
		r = rec_of(1, 5, ST_REC_BLOCK | b, 77, 2, b * 512, 4096);
		assert_int_equal(idx_put(st, &r), 0);
	}
	assert_int_equal(idx_file_records(st, 1, 5), 10 + (10 * bpe + 2) / 3);
	/* extents 3 and 4 and their blocks */
	assert_int_equal(idx_drop_file(st, 1, 5, 3, 2),
			 2 + (5 * bpe + 2) / 3 - (3 * bpe + 2) / 3);
	for (x = 0; x < 10; x++)
		assert_int_equal(idx_get(st, 1, 5, x, &o) == 0,
				 x < 3 || x > 4);
	for (b = 0; b < 10 * bpe; b += 3)
		assert_int_equal(idx_get(st, 1, 5, ST_REC_BLOCK | b, &o) == 0,
				 b < 3 * bpe || b >= 5 * bpe);
	assert_int_equal(idx_file_records(st, 1, 6), 10);
	/* from extent 8 to the end */
	idx_drop_file(st, 1, 5, 8, 0);
	assert_int_equal(idx_get(st, 1, 5, 7, &o), 0);
	assert_int_equal(idx_get(st, 1, 5, 8, &o), -ENOENT);
	assert_int_equal(idx_get(st, 1, 5, ST_REC_BLOCK | (8 * bpe + 1), &o),
			 -ENOENT);
	/* a new stamp for the rest, in place */
	idx_set_stamp(st, 1, 5, 78);
	assert_true(idx_file_stamp(st, 1, 5, &s));
	assert_int_equal(s, 78);
	assert_int_equal(idx_lookup(st, 1, 5, 0, 78, &o), 0);
	assert_int_equal(idx_lookup(st, 1, 5, 0, 77, &o), -ESTALE);
	assert_int_equal(idx_lookup(st, 1, 6, 0, 77, &o), 0);
	/* everything */
	idx_drop_file(st, 1, 5, 0, 0);
	assert_false(idx_file_stamp(st, 1, 5, NULL));
	assert_int_equal(idx_file_records(st, 1, 6), 10);
	assert_int_equal(st->nbytes, 10ull * EXT);
}

/* The file table full: -ENOSPC, nothing else disturbed, room again
 * once a file goes. */
static void test_idx_full_table(void **state)
{
	struct hotfs_store *st = *state;
	struct st_rec r, o;
	uint32_t i, max;

	idx_exit(st);
	assert_int_equal(idx_init(st, 8, 0), 0);
	max = st->file_max;
	assert_true(max >= 8);
	for (i = 0; i < max; i++) {
		r = rec_of(1, 100 + i, 0, 1, 0, 0, 512);
		assert_int_equal(idx_put(st, &r), 0);
	}
	r = rec_of(1, 100 + max, 0, 1, 0, 0, 512);
	assert_int_equal(idx_put(st, &r), -ENOSPC);
	assert_int_equal(idx_get(st, 1, 100 + max, 0, &o), -ENOENT);
	/* more records of files already there still fit */
	r = rec_of(1, 100, 1, 1, 0, 512, 512);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_records(st), max + 1);
	idx_drop_file(st, 1, 101, 0, 0);
	r = rec_of(1, 100 + max, 0, 1, 0, 0, 512);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_get(st, 1, 100 + max, 0, &o), 0);
	/* the records' memory full: -ENOMEM, the index whole */
	st->bt.limit = st->bt.bytes;
	for (i = 0; i < 10000; i++) {
		int rc;

		r = rec_of(1, 100, ST_REC_BLOCK | i, 1, 0, 0, 4096);
		rc = idx_put(st, &r);
		if (rc) {
			assert_int_equal(rc, -ENOMEM);
			break;
		}
	}
	assert_true(i < 10000);
	assert_int_equal(bt_check(&st->bt), 0);
	assert_int_equal(idx_get(st, 1, 100, 1, &o), 0);
}

/* Many files (the hash grows, incrementally, under lookups), and many
 * records of one file; same inode on two devices. */
static void test_idx_collisions(void **state)
{
	struct hotfs_store *st = *state;
	uint32_t i, nf = 100000, nb = 300000;
	struct st_rec r, o;

	for (i = 0; i < nf; i++) {
		r = rec_of(i % 2 + 1, i / 2, i % 5, i, i % 64, 512 * (i % 999),
			   1 + i % 4000);
		assert_int_equal(idx_put(st, &r), 0);
		if (i % 1000 == 999) {
			uint32_t j = rnd() % i;

			assert_int_equal(idx_lookup(st, j % 2 + 1, j / 2, j % 5,
						    j, &o), 0);
			assert_int_equal(o.len, 1 + j % 4000);
		}
	}
	assert_int_equal(st->nfiles, nf);
	assert_true(st->fmask + 1 >= nf / 2);	/* it grew */
	for (i = 0; i < nf; i++) {
		assert_int_equal(idx_lookup(st, i % 2 + 1, i / 2, i % 5, i,
					    &o), 0);
		assert_int_equal(o.region, i % 64);
		assert_int_equal(o.off, 512 * (i % 999));
	}
	/* one file of 300,000 blocks, scattered as random readers leave */
	for (i = 0; i < nb; i++) {
		uint32_t b = (uint32_t)((uint64_t)i * 40501 % nb);

		r = rec_of(9, 9, ST_REC_BLOCK | b, 5, b / 4096,
			   (b % 4096) * 4096, 4096);
		assert_int_equal(idx_put(st, &r), 0);
	}
	assert_int_equal(idx_file_records(st, 9, 9), nb);
	for (i = 0; i < nb; i += 7) {
		assert_int_equal(idx_lookup(st, 9, 9, ST_REC_BLOCK | i, 5, &o),
				 0);
		assert_int_equal(o.region, i / 4096);
		assert_int_equal(o.off, (i % 4096) * 4096);
	}
	/* dropping the big file leaves every small one */
	assert_int_equal(idx_drop_file(st, 9, 9, 0, 0), nb);
	assert_int_equal(idx_records(st), nf);
	for (i = 0; i < nf; i += 13)
		assert_int_equal(idx_get(st, i % 2 + 1, i / 2, i % 5, &o), 0);
	/* and half the small files */
	for (i = 0; i < nf; i += 2)
		idx_drop_file(st, i % 2 + 1, i / 2, 0, 0);
	assert_int_equal(st->nfiles, nf / 2);
	for (i = 0; i < nf; i++)
		assert_int_equal(idx_get(st, i % 2 + 1, i / 2, i % 5, &o) == 0,
				 i % 2);
}

struct hot_count {
	uint64_t n, hot;
	uint32_t region;
};

static int count_hot(void *arg, const struct st_rec *r)
{
	struct hot_count *c = arg;

	c->n++;
	c->hot += r->hot;
	return r->region == c->region ? BT_DROP : BT_KEEP;
}

/* Walk everything: hot marks seen, a region's records dropped. */
static void test_idx_walk_all_hot(void **state)
{
	struct hotfs_store *st = *state;
	struct hot_count c = { 0, 0, 3 };
	struct st_rec r, o;
	uint32_t i;

	for (i = 0; i < 5000; i++) {
		r = rec_of(1, i % 50, i, 1, i % 10, 0, 4096);
		assert_int_equal(idx_put(st, &r), 0);
	}
	for (i = 0; i < 5000; i += 4)
		assert_int_equal(idx_lookup(st, 1, i % 50, i, 1, &o), 0);
	assert_int_equal(idx_walk_all(st, count_hot, &c), 500);
	assert_int_equal(c.n, 5000);
	assert_int_equal(c.hot, 1250);
	assert_int_equal(idx_records(st), 4500);
	assert_int_equal(st->nbytes, 4500ull * 4096);
	for (i = 0; i < 5000; i++)
		assert_int_equal(idx_get(st, 1, i % 50, i, &o) == 0,
				 i % 10 != 3);
}

/* The location word at its limits: the last 512 bytes of a 512 TiB data
 * file, a 4 MiB record, a 1 GiB region's last sector. */
static void test_idx_loc_limits(void **state)
{
	struct hotfs_store *st = *state;
	uint32_t regions = ST_DATA_MAX / RSIZE;
	struct st_rec r, o;

	r = rec_of(1, 1, 0, 1, regions - 1, RSIZE - 512, 4u << 20);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_get(st, 1, 1, 0, &o), 0);
	assert_int_equal(o.region, regions - 1);
	assert_int_equal(o.off, RSIZE - 512);
	assert_int_equal(o.len, 4u << 20);
	r = rec_of(1, 1, 1, 1, 0, 0, 1);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_get(st, 1, 1, 1, &o), 0);
	assert_int_equal(o.len, 1);
	assert_int_equal(o.region, 0);
	assert_int_equal(st->nbytes, (4u << 20) + 1);
	/* a big region size */
	st->g.rsize = 1u << 30;
	r = rec_of(1, 2, 0, 1, 7, (1u << 30) - 4096, 4096);
	assert_int_equal(idx_put(st, &r), 0);
	assert_int_equal(idx_get(st, 1, 2, 0, &o), 0);
	assert_int_equal(o.region, 7);
	assert_int_equal(o.off, (1u << 30) - 4096);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bt_reference),
		cmocka_unit_test(test_bt_bytes_per_record),
		cmocka_unit_test(test_bt_walk),
		cmocka_unit_test(test_bt_out_of_memory),
		T(test_idx_insert_lookup),
		T(test_idx_delete),
		T(test_idx_range_drop_restamp),
		T(test_idx_full_table),
		T(test_idx_collisions),
		T(test_idx_walk_all_hot),
		T(test_idx_loc_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
