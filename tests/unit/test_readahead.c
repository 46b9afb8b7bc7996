// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the read-ahead of cached extents (src/cache/readahead.c) on a
 * real store, a real io_uring and real O_DIRECT reads.  The store lives
 * under /var/tmp (O_DIRECT needs a disk filesystem; tmpfs refuses it);
 * where O_DIRECT or io_uring is refused the tests skip.
 *
 * Extent contents are a pure function of (ino, extno, len): every byte a
 * slot hands out is checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/readahead.h"
#include "hotfs/store.h"

#define EXT	(64u * 1024)
#define NEXT	24u
#define DEV	7u
#define INO	42u

struct fx {
	char dir[64];
	struct hotfs_store *st;
	struct hotfs_ra *ra;
	struct hotfs_stamp stamp;
	struct hotfs_key key;
};

static const char ident[] = "/srv/slow dev=2049 ino=2";

static void fill(void *buf, uint32_t len, uint32_t extno)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)extno << 20 ^
		     (uint64_t)len << 40;
	uint8_t *p = buf;
	uint32_t i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

static bool same(const void *data, uint32_t len, uint32_t extno)
{
	char *want = malloc(len);
	bool r;

	assert_non_null(want);
	fill(want, len, extno);
	r = memcmp(want, data, len) == 0;
	free(want);
	return r;
}

/* A store holding NEXT extents of EXT bytes of one file, and read-ahead
 * on it with budget slots' worth of buffers. */
static int setup_with(void **state, size_t budget)
{
	struct hotfs_store_params p = { 0 };
	struct fx *f = calloc(1, sizeof(*f));
	char err[256], why[128];
	char *buf = malloc(EXT);
	uint32_t i;
	int r;

	assert_non_null(f);
	assert_non_null(buf);
	strcpy(f->dir, "/var/tmp/hotfs-ra-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	p.ident = ident;
	p.ident_len = sizeof(ident) - 1;
	p.capacity = 16u << 20;
	p.extent = EXT;
	p.region = 4u << 20;
	assert_int_equal(st_open(f->dir, &p, &f->st, err, sizeof(err)), 0);
	f->key.dev = DEV;
	f->key.ino = INO;
	f->stamp.ino = INO;
	f->stamp.size = (uint64_t)NEXT * EXT;
	f->stamp.mtime_ns = 1700000000000000000ll;
	f->stamp.ctime_ns = 1700000000000000001ll;
	for (i = 0; i < NEXT; i++) {
		fill(buf, EXT, i);
		assert_int_equal(st_insert(f->st, &f->key, i, &f->stamp, buf,
					   EXT), 0);
	}
	free(buf);
	r = ra_new(&f->ra, f->st, EXT, budget, why, sizeof(why));
	*state = f;
	if (r < 0) {
		print_message("read-ahead unavailable here (%s): skipped\n",
			      why);
		return 0;
	}
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, 0);
}

static int setup_small(void **state)
{
	return setup_with(state, 4 * EXT);	/* 4 < RA_MIN_SLOTS: 8 */
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ra_free(f->ra);
	st_close(f->st);
	ut_rm_tree(f->dir);
	free(f);
	return 0;
}

#define NEED_RA(f) do { if (!(f)->ra) { skip(); } } while (0)

static void loc_of(struct fx *f, uint32_t extno, struct hotfs_loc *loc)
{
	assert_int_equal(st_lookup(f->st, &f->key, extno, &f->stamp, loc), 0);
}

/* A get reads the whole extent once; later gets of it are served from the
 * slot without reading again; every byte is the extent's. */
static void test_get_reads_once(void **state)
{
	struct fx *f = *state;
	struct ra_counts c;
	struct hotfs_loc loc;
	struct ra_ref ref;
	int i;

	NEED_RA(f);
	loc_of(f, 3, &loc);
	assert_true(ra_eligible(f->ra, &loc));
	for (i = 0; i < 3; i++) {
		assert_int_equal(ra_get(f->ra, &loc, &ref), 0);
		assert_non_null(ref.data);
		assert_true(same(ref.data, EXT, 3));
		ra_put(f->ra, &ref, false);
		assert_null(ref.slot);
	}
	ra_get_counts(f->ra, &c);
	assert_int_equal(c.reads, 1);
	assert_int_equal(c.bytes, EXT);
	assert_int_equal(c.served, 3);
	assert_int_equal(c.failed, 0);
}

/* A slot is not a cache: once a reader is done with it, the next reader
 * reads the device again, and sees damage done there meanwhile. */
static void test_done_reads_again(void **state)
{
	struct fx *f = *state;
	struct hotfs_loc loc;
	struct ra_counts c;
	struct ra_ref ref;
	char junk[4096];
	char path[128];
	int fd;

	NEED_RA(f);
	loc_of(f, 9, &loc);
	assert_int_equal(ra_get(f->ra, &loc, &ref), 0);
	assert_true(same(ref.data, EXT, 9));
	ra_put(f->ra, &ref, true);
	memset(junk, 0xa5, sizeof(junk));
	snprintf(path, sizeof(path), "%s/data", f->dir);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)loc.off),
			 (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(ra_get(f->ra, &loc, &ref), -EBADMSG);
	ra_get_counts(f->ra, &c);
	assert_int_equal(c.reads, 2);
}

/* A prefetch starts the read without waiting; the get that follows uses
 * it: one read per extent, whichever comes first. */
static void test_prefetch_then_get(void **state)
{
	struct fx *f = *state;
	struct hotfs_loc loc[8];
	struct ra_counts c;
	struct ra_ref ref;
	uint32_t i;

	NEED_RA(f);
	for (i = 0; i < 8; i++) {
		loc_of(f, i, &loc[i]);
		assert_true(ra_prefetch(f->ra, &loc[i]));
		assert_true(ra_prefetch(f->ra, &loc[i]));	/* no second */
	}
	for (i = 0; i < 8; i++) {
		assert_int_equal(ra_get(f->ra, &loc[i], &ref), 0);
		assert_true(same(ref.data, EXT, i));
		ra_put(f->ra, &ref, true);
	}
	ra_get_counts(f->ra, &c);
	assert_int_equal(c.reads, 8);
	assert_int_equal(c.served, 8);
}

/* Bytes changed on the cache device behind the store's back fail the
 * whole-extent checksum: -EBADMSG, the entry is dropped, and the bytes are
 * never handed out. */
static void test_corrupt_never_served(void **state)
{
	struct fx *f = *state;
	struct hotfs_loc loc;
	struct ra_counts c;
	struct ra_ref ref;
	char junk[512];
	char path[128];
	int fd;

	NEED_RA(f);
	loc_of(f, 5, &loc);
	memset(junk, 0x5a, sizeof(junk));
	snprintf(path, sizeof(path), "%s/data", f->dir);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk),
				(off_t)loc.off + 8192), (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(ra_get(f->ra, &loc, &ref), -EBADMSG);
	assert_null(ref.data);
	/* dropped: the next reader misses and reads the source */
	assert_int_equal(st_lookup(f->st, &f->key, 5, &f->stamp, &loc),
			 -ENOENT);
	ra_get_counts(f->ra, &c);
	assert_int_equal(c.failed, 1);
	/* the other extents are still served, right */
	loc_of(f, 6, &loc);
	assert_int_equal(ra_get(f->ra, &loc, &ref), 0);
	assert_true(same(ref.data, EXT, 6));
	ra_put(f->ra, &ref, false);
}

/* A loc that is not 4 KiB-aligned in the data file is not for O_DIRECT:
 * -EINVAL, nothing read (the caller takes the buffered path). */
static void test_unaligned_refused(void **state)
{
	struct fx *f = *state;
	struct hotfs_loc loc;
	struct ra_counts c;
	struct ra_ref ref;

	NEED_RA(f);
	loc_of(f, 1, &loc);
	loc.off += 512;
	assert_false(ra_eligible(f->ra, &loc));
	assert_false(ra_prefetch(f->ra, &loc));
	assert_int_equal(ra_get(f->ra, &loc, &ref), -EINVAL);
	loc_of(f, 1, &loc);
	loc.len = EXT * 2;	/* longer than an extent */
	assert_false(ra_eligible(f->ra, &loc));
	ra_get_counts(f->ra, &c);
	assert_int_equal(c.reads, 0);
}

/* With every slot held, a get of another extent is refused (-EBUSY) and
 * no held slot is reused; once one is given back it is. */
static void test_held_slots_not_reused(void **state)
{
	struct fx *f = *state;
	struct ra_ref held[RA_MIN_SLOTS], ref;
	struct hotfs_loc loc;
	uint32_t i;

	NEED_RA(f);
	for (i = 0; i < RA_MIN_SLOTS; i++) {
		loc_of(f, i, &loc);
		assert_int_equal(ra_get(f->ra, &loc, &held[i]), 0);
	}
	loc_of(f, RA_MIN_SLOTS, &loc);
	assert_false(ra_prefetch(f->ra, &loc));
	assert_int_equal(ra_get(f->ra, &loc, &ref), -EBUSY);
	for (i = 0; i < RA_MIN_SLOTS; i++)
		assert_true(same(held[i].data, EXT, i));
	ra_put(f->ra, &held[2], true);
	assert_int_equal(ra_get(f->ra, &loc, &ref), 0);
	assert_true(same(ref.data, EXT, RA_MIN_SLOTS));
	for (i = 0; i < RA_MIN_SLOTS; i++)
		if (i != 2)
			assert_true(same(held[i].data, EXT, i));
	ra_put(f->ra, &ref, false);
	for (i = 0; i < RA_MIN_SLOTS; i++)
		ra_put(f->ra, &held[i], false);
}

/* Readers on four threads over more extents than slots: every get that
 * succeeds hands out the right bytes, and each thread gets most. */
struct worker {
	struct fx *f;
	unsigned seed;
	unsigned ok, wrong;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	int i;

	for (i = 0; i < 400; i++) {
		struct hotfs_loc loc;
		struct ra_ref ref;
		uint32_t x = (uint32_t)rand_r(&w->seed) % NEXT;

		if (st_lookup(w->f->st, &w->f->key, x, &w->f->stamp, &loc))
			continue;
		if (rand_r(&w->seed) % 3 == 0 && x + 1 < NEXT) {
			struct hotfs_loc next;

			if (!st_lookup(w->f->st, &w->f->key, x + 1,
				       &w->f->stamp, &next))
				ra_prefetch(w->f->ra, &next);
		}
		if (ra_get(w->f->ra, &loc, &ref))
			continue;
		if (same(ref.data, EXT, x))
			w->ok++;
		else
			w->wrong++;
		ra_put(w->f->ra, &ref, rand_r(&w->seed) % 2);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct fx *f = *state;
	struct worker w[4];
	pthread_t th[4];
	int i;

	NEED_RA(f);
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .f = f, .seed = (unsigned)i + 1 };
		assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].wrong, 0);
		/* 8 slots, 4 threads holding one each: gets rarely fail */
		assert_true(w[i].ok > 200);
	}
}

/* Freed with reads in flight: ra_free waits for them (no read lands in
 * freed memory: ASan would see it). */
static void test_free_in_flight(void **state)
{
	struct fx *f = *state;
	struct hotfs_loc loc;
	uint32_t i;

	NEED_RA(f);
	for (i = 0; i < NEXT; i++) {
		loc_of(f, i, &loc);
		ra_prefetch(f->ra, &loc);
	}
	ra_free(f->ra);
	f->ra = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_reads_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_done_reads_again, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_prefetch_then_get, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_never_served,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unaligned_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_held_slots_not_reused,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_free_in_flight, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
