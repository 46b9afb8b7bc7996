// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the file grain (src/cache/filecopy.c): whole-file copies
 * made by the copier thread from a real store's records (extents, blocks
 * or both), what an open gets, stale and dropped copies, max_bytes and
 * the coldest copy, the store's reserve, the names read back at open,
 * and the scrub.
 *
 * Each test has its own mkdtemp directory holding the cachedir.  A
 * file's bytes are a pure function of (ino, version), so a copy can be
 * compared with what was inserted.  Waits are bounded polls (WAIT_UNTIL),
 * never a fixed sleep.  The copier's fdatasync is wrapped (link with
 * --wrap=fdatasync) so that one test can hold a copy in the middle of
 * its making.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "unit_util.h"

#include "hotfs/filecopy.h"
#include "hotfs/log.h"
#include "hotfs/store.h"

#define EXT	(256u * 1024)
#define RSIZE	(1u << 20)
#define CAP	(32u << 20)
/* 13 extents, the last one short: a tail */
#define FSIZE	((3ull << 20) + 5000)
#define NEXT	((uint32_t)((FSIZE + EXT - 1) / EXT))

struct fx {
	char dir[64];
	char cache[128];
	int dirfd;			/* the cachedir */
	struct hotfs_store *st;
	struct hotfs_store_params sp;
	struct hotfs_copies *cp;
	struct fc_params fp;
	char err[256];
};

static const char ident[] = "/srv/slow dev=2049 ino=2";

/* ---- fdatasync held on demand (one test) ---- */

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);

static atomic_bool hold_sync;
static atomic_bool sync_held;

/* While hold_sync is set, an fdatasync waits (at most UT_WAIT_NS, so a
 * failed test cannot hang the copier) and says so in sync_held. */
int __wrap_fdatasync(int fd)
{
	int64_t until = clock_mono_ns() + UT_WAIT_NS;

	if (atomic_load(&hold_sync)) {
		atomic_store(&sync_held, true);
		while (atomic_load(&hold_sync) && clock_mono_ns() < until)
			poll(NULL, 0, 1);
	}
	return __real_fdatasync(fd);
}

/* ---- a file's bytes, keys, stamps ---- */

static void fill(uint8_t *buf, uint64_t size, uint64_t ino, uint32_t ver)
{
	uint64_t x = ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)ver << 32 ^ 1;
	uint64_t i, v = 0;

	for (i = 0; i < size; i++) {
		if (i % 8 == 0)
			v = ut_rnd(&x);
		buf[i] = (uint8_t)(v >> (8 * (i % 8)));
	}
}

static uint8_t *file_bytes(uint64_t ino, uint32_t ver, uint64_t size)
{
	uint8_t *buf = malloc(size);

	assert_non_null(buf);
	fill(buf, size, ino, ver);
	return buf;
}

/* dev 0: the source root's device, whose copies are kept across opens */
static struct hotfs_key key_of(uint64_t ino)
{
	struct hotfs_key k = { 0, ino };

	return k;
}

static struct hotfs_stamp stamp_of(uint64_t ino, uint32_t ver, uint64_t size)
{
	struct hotfs_stamp s = { ino, size, 1700000000000000000ll + ver,
				 1700000000000000001ll + ver };

	return s;
}

/*
 * Cache version ver of file ino (size bytes) in the store: extent e as
 * an extent record, or as its 4 KiB block records where bit e of
 * as_blocks is set; none of extent e where bit e of skip is set, nor
 * block skip_blk (UINT64_MAX: none).
 */
static void insert_file(struct fx *f, uint64_t ino, uint32_t ver,
			uint64_t size, uint64_t as_blocks, uint64_t skip,
			uint64_t skip_blk)
{
	struct hotfs_key k = key_of(ino);
	struct hotfs_stamp s = stamp_of(ino, ver, size);
	uint8_t *buf = file_bytes(ino, ver, size);
	uint64_t off, b;
	uint32_t e;

	for (e = 0, off = 0; off < size; e++, off += EXT) {
		uint64_t len = size - off < EXT ? size - off : EXT;

		if (skip >> e & 1)
			continue;
		if (!(as_blocks >> e & 1)) {
			assert_int_equal(st_insert(f->st, &k, e, &s, buf + off,
						   len), 0);
			continue;
		}
		for (b = off / ST_BLOCK; b * ST_BLOCK < off + len; b++) {
			uint64_t bl = off + len - b * ST_BLOCK;

			if (b == skip_blk)
				continue;
			assert_int_equal(st_insert(f->st, &k,
						   ST_REC_BLOCK | (uint32_t)b,
						   &s, buf + b * ST_BLOCK,
						   bl < ST_BLOCK ? bl :
						   ST_BLOCK), 0);
		}
	}
	free(buf);
}

static void insert_whole(struct fx *f, uint64_t ino, uint32_t ver,
			 uint64_t size)
{
	insert_file(f, ino, ver, size, 0, 0, UINT64_MAX);
}

/* The name a copy of version ver of file ino has in files/. */
static void copy_name(uint64_t ino, uint32_t ver, uint64_t size, char *name,
		      size_t len)
{
	struct hotfs_stamp s = stamp_of(ino, ver, size);
	uint8_t *buf = file_bytes(ino, ver, size);

	snprintf(name, len, "%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64
		 "-%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64,
		 (uint64_t)0, ino, s.ino, s.size, (uint64_t)s.mtime_ns,
		 (uint64_t)s.ctime_ns, XXH3_64bits(buf, size));
	free(buf);
}

/* ---- the fixture ---- */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || !ut_tmpdir("filecopy", f->dir, sizeof(f->dir)))
		return -1;
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
	if (mkdir(f->cache, 0700))
		return -1;
	f->dirfd = open(f->cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0)
		return -1;
	f->sp.ident = ident;
	f->sp.ident_len = sizeof(ident) - 1;
	f->sp.capacity = CAP;
	f->sp.extent = EXT;
	f->sp.region = RSIZE;
	f->sp.commit_ms = 3600 * 1000;
	f->sp.commit_bytes = 1ull << 40;
	f->fp.dirfd = f->dirfd;
	f->fp.extent = EXT;
	f->fp.max_bytes = CAP / 2;
	f->fp.min_size = FC_MIN_SIZE;
	f->fp.scrub_rate = 0;
	atomic_store(&hold_sync, false);
	atomic_store(&sync_held, false);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	atomic_store(&hold_sync, false);
	fc_close(f->cp);
	if (f->st)
		st_close(f->st);
	close(f->dirfd);
	ut_rm_tree(f->dir);
	free(f);
	return 0;
}

static void open_store(struct fx *f)
{
	int err = st_open(f->cache, &f->sp, &f->st, f->err, sizeof(f->err));

	if (err)
		print_error("st_open: %s (%s)\n", strerror(-err), f->err);
	assert_int_equal(err, 0);
	f->fp.st = f->st;
}

/* fc_open on the cachedir (start: and the copier's thread). */
static void open_copies(struct fx *f, bool start)
{
	int err = fc_open(&f->cp, &f->fp, f->err, sizeof(f->err));

	if (err)
		print_error("fc_open: %s (%s)\n", strerror(-err), f->err);
	assert_int_equal(err, 0);
	if (start)
		assert_int_equal(fc_start(f->cp), 0);
}

static void close_copies(struct fx *f)
{
	fc_close(f->cp);
	f->cp = NULL;
}

static struct fc_stats stats(struct fx *f)
{
	struct fc_stats s;

	fc_get_stats(f->cp, &s);
	return s;
}

static bool has(struct fx *f, uint64_t ino, uint32_t ver, uint64_t size)
{
	struct hotfs_key k = key_of(ino);
	struct hotfs_stamp s = stamp_of(ino, ver, size);

	return fc_has(f->cp, &k, &s);
}

static int get(struct fx *f, uint64_t ino, uint32_t ver, uint64_t size,
	       bool want)
{
	struct hotfs_key k = key_of(ino);
	struct hotfs_stamp s = stamp_of(ino, ver, size);

	return fc_get(f->cp, &k, &s, want);
}

/* Ask for a copy of a wholly cached file and wait until it is made. */
static void make_copy(struct fx *f, uint64_t ino, uint32_t ver, uint64_t size)
{
	assert_int_equal(get(f, ino, ver, size, true), -ENOENT);
	WAIT_UNTIL(has(f, ino, ver, size));
}

/* The names in files/: how many, and whether name is one of them. */
static unsigned files_in(struct fx *f, const char *name, bool *found)
{
	char path[192];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/files", f->cache);
	d = opendir(path);
	assert_non_null(d);
	if (found)
		*found = false;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		if (found && name && !strcmp(de->d_name, name))
			*found = true;
	}
	closedir(d);
	return n;
}

static bool file_there(struct fx *f, uint64_t ino, uint32_t ver,
		       uint64_t size)
{
	char name[160];
	bool found;

	copy_name(ino, ver, size, name, sizeof(name));
	files_in(f, name, &found);
	return found;
}

/* fd is read-only and holds exactly version ver of file ino. */
static void check_fd(int fd, uint64_t ino, uint32_t ver, uint64_t size)
{
	uint8_t *want = file_bytes(ino, ver, size), *got = malloc(size + 1);
	struct stat sb;

	assert_true(fd >= 0);
	assert_non_null(got);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, size);
	assert_int_equal(pread(fd, got, size + 1, 0), size);
	assert_memory_equal(got, want, size);
	free(want);
	free(got);
}

/* ---- the tests ---- */

/* A wholly cached file: queued, made, and what an open gets is its
 * bytes, under the name that carries key, stamp and hash. */
static void test_made_and_read(void **state)
{
	struct fx *f = *state;
	struct fc_stats s;
	int fd;

	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	open_copies(f, true);
	assert_false(has(f, 1, 0, FSIZE));
	make_copy(f, 1, 0, FSIZE);
	s = stats(f);
	assert_int_equal(s.copies, 1);
	assert_int_equal(s.bytes, FSIZE);
	assert_int_equal(s.made, 1);
	assert_int_equal(s.made_bytes, FSIZE);
	assert_int_equal(s.failed, 0);
	assert_int_equal(s.dropped, 0);
	assert_int_equal(files_in(f, NULL, NULL), 1);
	assert_true(file_there(f, 1, 0, FSIZE));
	/* another stamp is not this copy */
	assert_false(has(f, 1, 1, FSIZE));

	fd = get(f, 1, 0, FSIZE, false);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);
	/* want of a copy there queues nothing more */
	fd = get(f, 1, 0, FSIZE, true);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);
	s = stats(f);
	assert_int_equal(s.made, 1);
	assert_int_equal(s.copies, 1);
}

/* fc_read: the copy's bytes at its stamp (fewer at its end), counted as
 * a use; none at another stamp, and the copy stays (the read's stamp may
 * be the older one); none once the copy is gone. */
/* Descriptors this process holds on copies (files under files/). */
static int copy_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char p[300], t[PATH_MAX];
	int n = 0;
	ssize_t l;

	assert_non_null(d);
	while ((de = readdir(d))) {
		snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
		l = readlink(p, t, sizeof(t) - 1);
		if (l > 0) {
			t[l] = 0;
			n += strstr(t, "/files/") != NULL;
		}
	}
	closedir(d);
	return n;
}

static void test_read(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(1);
	struct hotfs_stamp s0 = stamp_of(1, 0, FSIZE);
	struct hotfs_stamp s1 = stamp_of(1, 1, FSIZE);
	uint8_t *want = file_bytes(1, 0, FSIZE), buf[8192];
	struct fc_stats st;

	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	open_copies(f, true);
	assert_int_equal(fc_read(f->cp, &k, &s0, buf, sizeof(buf), 0),
			 -ENOENT);
	make_copy(f, 1, 0, FSIZE);
	/* the copier closes its file just after the copy is in the table */
	WAIT_UNTIL(copy_fds() == 0);
	assert_int_equal(fc_read(f->cp, &k, &s0, buf, sizeof(buf), 12345),
			 sizeof(buf));
	assert_memory_equal(buf, want + 12345, sizeof(buf));
	/* its descriptor is kept for the next reads */
	assert_int_equal(copy_fds(), 1);
	assert_int_equal(fc_read(f->cp, &k, &s0, buf, sizeof(buf),
				 FSIZE - 100), 100);
	assert_memory_equal(buf, want + FSIZE - 100, 100);
	assert_int_equal(copy_fds(), 1);
	assert_int_equal(fc_read(f->cp, &k, &s1, buf, sizeof(buf), 0),
			 -ENOENT);
	assert_true(has(f, 1, 0, FSIZE));
	st = stats(f);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.scrub_bad, 0);
	assert_int_equal(fc_drop(f->cp, &k), 1);
	assert_int_equal(copy_fds(), 0);	/* closed with the copy */
	assert_int_equal(fc_read(f->cp, &k, &s0, buf, sizeof(buf), 0),
			 -ENOENT);
	free(want);
}

/* Made from block records where an extent is not cached, the tail's
 * too; a short file and one missing a block or an extent get none. */
static void test_from_blocks(void **state)
{
	struct fx *f = *state;
	uint64_t tail = 1ull << (NEXT - 1);
	struct fc_stats s;
	int fd;

	open_store(f);
	/* extents 3 and the tail as blocks only */
	insert_file(f, 2, 0, FSIZE, 1ull << 3 | tail, 0, UINT64_MAX);
	/* extent 5 missing */
	insert_file(f, 3, 0, FSIZE, 0, 1ull << 5, UINT64_MAX);
	/* extent 2 as blocks, one of them missing */
	insert_file(f, 4, 0, FSIZE, 1ull << 2, 0, 2 * EXT / ST_BLOCK + 7);
	/* wholly cached, below min_size */
	insert_whole(f, 5, 0, FC_MIN_SIZE - 1);
	insert_whole(f, 6, 0, FSIZE);
	open_copies(f, true);

	assert_int_equal(get(f, 3, 0, FSIZE, true), -ENOENT);
	assert_int_equal(get(f, 4, 0, FSIZE, true), -ENOENT);
	assert_int_equal(get(f, 5, 0, FC_MIN_SIZE - 1, true), -ENOENT);
	assert_int_equal(get(f, 2, 0, FSIZE, true), -ENOENT);
	/* the copier takes its jobs in order: once 6 (asked last) is
	 * made, any job for the others was done */
	make_copy(f, 6, 0, FSIZE);
	assert_true(has(f, 2, 0, FSIZE));
	fd = get(f, 2, 0, FSIZE, false);
	check_fd(fd, 2, 0, FSIZE);
	close(fd);
	assert_false(has(f, 3, 0, FSIZE));
	assert_false(has(f, 4, 0, FSIZE));
	assert_false(has(f, 5, 0, FC_MIN_SIZE - 1));
	s = stats(f);
	assert_int_equal(s.made, 2);
	assert_int_equal(s.copies, 2);
	assert_int_equal(s.failed, 0);
	assert_int_equal(files_in(f, NULL, NULL), 2);
	assert_true(file_there(f, 2, 0, FSIZE));
	assert_true(file_there(f, 6, 0, FSIZE));
}

/* Copies age with the store: once it has evicted as many regions as it
 * may hold since a lap began, a copy not used since goes; one read in
 * the lap stays, until a lap passes without a use. */
static void test_aged(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k1 = key_of(1);
	struct hotfs_stamp s1;
	struct hotfs_store_stats ss;
	const uint64_t size = FC_MIN_SIZE + 5000;
	uint64_t ino = 30, ev;
	uint8_t buf[4096];
	struct fc_stats st;

	s1 = stamp_of(1, 0, size);
	f->sp.capacity = 8 * RSIZE;
	f->fp.max_bytes = 4 * RSIZE;
	open_store(f);
	insert_whole(f, 1, 0, size);
	insert_whole(f, 2, 0, size);
	open_copies(f, true);
	make_copy(f, 1, 0, size);
	make_copy(f, 2, 0, size);
	assert_int_equal(st_tick(f->st), 0);
	fc_tick(f->cp);			/* a lap begins */
	/* no evictions since: nothing ages */
	fc_tick(f->cp);
	assert_true(has(f, 1, 0, size) && has(f, 2, 0, size));
	assert_int_equal(fc_read(f->cp, &k1, &s1, buf, sizeof(buf), 0),
			 sizeof(buf));
	for (int lap = 0; lap < 2; lap++) {
		st_get_stats(f->st, &ss);
		ev = ss.evictions;
		assert_true(ss.regions_allowed < ss.regions);
		/* the store goes once through what it may hold */
		while (ss.evictions - ev < ss.regions_allowed) {
			insert_whole(f, ino++, 0, 4 * EXT);
			assert_int_equal(st_tick(f->st), 0);
			st_get_stats(f->st, &ss);
		}
		fc_tick(f->cp);
		st = stats(f);
		if (lap == 0) {
			/* 2 went, 1 (read in the lap) stays */
			assert_true(has(f, 1, 0, size));
			assert_false(has(f, 2, 0, size));
			assert_int_equal(st.aged, 1);
			assert_int_equal(st.copies, 1);
		} else {
			assert_false(has(f, 1, 0, size));
			assert_int_equal(st.aged, 2);
			assert_int_equal(st.copies, 0);
		}
	}
	assert_int_equal(files_in(f, NULL, NULL), 0);
}

/* An open at another stamp removes the copy; so does fc_drop. */
/* keep_records: every file's records stay beside its copy (as a pinned
 * file's do), for the tests that make a file's copy more than once */
static bool keep_all(void *arg, const struct hotfs_key *key)
{
	(void)arg;
	(void)key;
	return true;
}

static void test_stale_and_drop(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(1);
	struct fc_stats s;

	f->fp.keep_records = keep_all;
	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	open_copies(f, true);
	make_copy(f, 1, 0, FSIZE);
	assert_true(file_there(f, 1, 0, FSIZE));

	/* the source changed: its open gets none, the copy goes */
	assert_int_equal(get(f, 1, 1, FSIZE, false), -ENOENT);
	s = stats(f);
	assert_int_equal(s.dropped, 1);
	assert_int_equal(s.copies, 0);
	assert_int_equal(s.bytes, 0);
	assert_false(has(f, 1, 0, FSIZE));
	assert_int_equal(files_in(f, NULL, NULL), 0);

	/* made again (the store still holds version 0), then dropped */
	make_copy(f, 1, 0, FSIZE);
	assert_int_equal(files_in(f, NULL, NULL), 1);
	assert_int_equal(fc_drop(f->cp, &k), 1);
	assert_false(has(f, 1, 0, FSIZE));
	assert_int_equal(files_in(f, NULL, NULL), 0);
	s = stats(f);
	assert_int_equal(s.dropped, 2);
	assert_int_equal(s.copies, 0);
	assert_int_equal(s.bytes, 0);
	assert_int_equal(s.made, 2);
	assert_int_equal(fc_drop(f->cp, &k), 0);
	assert_int_equal(get(f, 1, 0, FSIZE, false), -ENOENT);
}

/* max_bytes room for two: the copy opened least recently goes; a file
 * larger than max_bytes gets none. */
static void test_max_bytes_coldest(void **state)
{
	struct fx *f = *state;
	struct fc_stats s;
	int fd;

	f->fp.max_bytes = 2 * FSIZE + 1000;
	f->fp.keep_records = keep_all;
	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	insert_whole(f, 2, 0, FSIZE);
	insert_whole(f, 3, 0, FSIZE);
	insert_whole(f, 4, 0, 2 * FSIZE + 4096);
	open_copies(f, true);
	make_copy(f, 1, 0, FSIZE);
	make_copy(f, 2, 0, FSIZE);
	/* 1, made first, opened since: 2 is the coldest */
	fd = get(f, 1, 0, FSIZE, false);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);
	make_copy(f, 3, 0, FSIZE);
	WAIT_UNTIL(!has(f, 2, 0, FSIZE));
	assert_true(has(f, 1, 0, FSIZE));
	assert_true(has(f, 3, 0, FSIZE));
	s = stats(f);
	assert_int_equal(s.copies, 2);
	assert_int_equal(s.bytes, 2 * FSIZE);
	assert_int_equal(s.dropped, 1);
	assert_int_equal(files_in(f, NULL, NULL), 2);
	assert_true(file_there(f, 1, 0, FSIZE));
	assert_false(file_there(f, 2, 0, FSIZE));
	assert_true(file_there(f, 3, 0, FSIZE));

	/* too big for max_bytes: none queued (the next one is made, and
	 * evicts the coldest, now 1) */
	assert_int_equal(get(f, 4, 0, 2 * FSIZE + 4096, true), -ENOENT);
	make_copy(f, 2, 0, FSIZE);
	assert_false(has(f, 4, 0, 2 * FSIZE + 4096));
	assert_false(has(f, 1, 0, FSIZE));
	assert_true(has(f, 3, 0, FSIZE));
	s = stats(f);
	assert_int_equal(s.made, 4);
	assert_int_equal(s.failed, 0);
	assert_int_equal(files_in(f, NULL, NULL), 2);
}

/* The copies' bytes are taken from the store's capacity: a full store
 * gives up regions at its next tick, recycles instead of growing, and
 * grows again once the copy is gone. */
static void test_store_reserve(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(1);
	struct hotfs_store_stats ss;
	uint64_t res_regions = (FSIZE + RSIZE - 1) / RSIZE, ev;
	int fd;

	f->sp.capacity = 8 * RSIZE;
	f->fp.max_bytes = 4 * RSIZE;
	open_store(f);
	/* 6 extents of filler, then the file's 13: more regions than the
	 * copy will leave */
	insert_file(f, 9, 0, 6 * EXT, 0, 0, UINT64_MAX);
	insert_whole(f, 1, 0, FSIZE);
	st_get_stats(f->st, &ss);
	assert_int_equal(ss.regions, 8);
	assert_true(ss.regions_used > ss.regions - res_regions);
	assert_int_equal(ss.evictions, 0);
	ev = ss.evictions;

	open_copies(f, true);
	make_copy(f, 1, 0, FSIZE);
	assert_int_equal(st_tick(f->st), 0);
	st_get_stats(f->st, &ss);
	assert_true(ss.regions_used <= ss.regions - res_regions);
	assert_true(ss.evictions > ev);
	/* the copy stands without the records */
	fd = get(f, 1, 0, FSIZE, false);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);

	/* inserts recycle within what is left */
	ev = ss.evictions;
	insert_whole(f, 21, 0, 12 * EXT);
	st_get_stats(f->st, &ss);
	assert_true(ss.regions_used <= ss.regions - res_regions);
	assert_true(ss.evictions > ev);

	/* the copy gone: the store grows back to its capacity */
	assert_int_equal(fc_drop(f->cp, &k), 1);
	insert_whole(f, 22, 0, 24 * EXT);
	st_get_stats(f->st, &ss);
	assert_int_equal(ss.regions_used, ss.regions);
}

/* The names are read back at open; temporary files, junk and copies of
 * salted keys are removed; forget removes everything. */
static void test_reopen(void **state)
{
	struct fx *f = *state;
	char name[160], salted[160], path[512];
	struct fc_stats s;
	bool found;
	int fd;

	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	open_copies(f, true);
	make_copy(f, 1, 0, FSIZE);
	close_copies(f);

	copy_name(1, 0, FSIZE, name, sizeof(name));
	/* a copy of a file of another filesystem in the source (its key
	 * carries the run's salt): not kept across runs */
	memcpy(salted, name, sizeof(salted));
	salted[15] = '5';
	snprintf(path, sizeof(path), "%s/files/%s", f->cache, salted);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, FSIZE), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/files/.tmp-1", f->cache);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "half a copy", 11), 11);
	close(fd);
	snprintf(path, sizeof(path), "%s/files/junk", f->cache);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(files_in(f, NULL, NULL), 4);

	open_copies(f, false);
	assert_true(has(f, 1, 0, FSIZE));
	s = stats(f);
	assert_int_equal(s.copies, 1);
	assert_int_equal(s.bytes, FSIZE);
	assert_int_equal(s.made, 0);
	assert_int_equal(files_in(f, name, &found), 1);
	assert_true(found);
	fd = get(f, 1, 0, FSIZE, false);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);
	close_copies(f);

	f->fp.forget = true;
	open_copies(f, false);
	assert_false(has(f, 1, 0, FSIZE));
	s = stats(f);
	assert_int_equal(s.copies, 0);
	assert_int_equal(s.bytes, 0);
	assert_int_equal(files_in(f, NULL, NULL), 0);
}

/* The scrub passes a sound copy and removes one whose bytes the disk
 * changed. */
static void test_scrub(void **state)
{
	struct fx *f = *state;
	char name[160], path[512];
	struct fc_stats s;
	uint8_t b;
	int fd;

	f->fp.scrub_rate = 1ull << 30;
	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	open_copies(f, true);
	make_copy(f, 1, 0, FSIZE);
	/* a whole pass (at least) finds nothing */
	WAIT_UNTIL(stats(f).scrubbed_bytes >= 2 * FSIZE);
	s = stats(f);
	assert_int_equal(s.scrub_bad, 0);
	assert_true(has(f, 1, 0, FSIZE));

	/* one byte changed under it, out of the page cache */
	copy_name(1, 0, FSIZE, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/files/%s", f->cache, name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, 1234567), 1);
	b ^= 0x20;
	assert_int_equal(pwrite(fd, &b, 1, 1234567), 1);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);

	WAIT_UNTIL(stats(f).scrub_bad == 1);
	assert_false(has(f, 1, 0, FSIZE));
	s = stats(f);
	assert_int_equal(s.copies, 0);
	assert_int_equal(s.dropped, 1);
	assert_int_equal(files_in(f, NULL, NULL), 0);
	assert_int_equal(get(f, 1, 0, FSIZE, false), -ENOENT);
}

/*
 * A second open while the copy is being made queues the file again: the
 * copy stays (the second job finds it made), and an open gets it.
 */
static void test_queued_while_made(void **state)
{
	struct fx *f = *state;
	struct fc_stats s;
	int fd;

	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	insert_whole(f, 2, 0, FSIZE);
	open_copies(f, false);
	atomic_store(&hold_sync, true);
	assert_int_equal(fc_start(f->cp), 0);
	assert_int_equal(get(f, 1, 0, FSIZE, true), -ENOENT);
	/* the copier at the copy's fdatasync, the job off the queue */
	WAIT_UNTIL(atomic_load(&sync_held));
	assert_int_equal(get(f, 1, 0, FSIZE, true), -ENOENT);
	assert_int_equal(get(f, 2, 0, FSIZE, true), -ENOENT);
	atomic_store(&hold_sync, false);
	/* in order: 1, 1 again, then 2 */
	WAIT_UNTIL(has(f, 2, 0, FSIZE));
	assert_true(has(f, 1, 0, FSIZE));
	assert_true(file_there(f, 1, 0, FSIZE));
	fd = get(f, 1, 0, FSIZE, false);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);
	s = stats(f);
	assert_int_equal(s.copies, 2);
	assert_int_equal(s.made, 2);
	assert_int_equal(s.dropped, 0);
	assert_int_equal(s.failed, 0);
	assert_int_equal(files_in(f, NULL, NULL), 2);
}

/* Once the copy is made the store lets the file's records go (counted
 * as ST_INVAL_COPIED), unless keep_records keeps them; the other files'
 * stay. */
static bool keep_two(void *arg, const struct hotfs_key *key)
{
	(void)arg;
	return key->ino == 2;
}

static void test_records_let_go(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k1 = key_of(1), k2 = key_of(2), k3 = key_of(3);
	struct hotfs_stamp s1 = stamp_of(1, 0, FSIZE), s2 = stamp_of(2, 0, FSIZE),
			   s3 = stamp_of(3, 0, FSIZE);
	struct hotfs_store_stats ss;
	uint64_t bytes, recs;
	int fd;

	f->fp.keep_records = keep_two;
	open_store(f);
	insert_whole(f, 1, 0, FSIZE);
	insert_whole(f, 2, 0, FSIZE);
	insert_whole(f, 3, 0, FSIZE);
	open_copies(f, true);
	make_copy(f, 1, 0, FSIZE);
	make_copy(f, 2, 0, FSIZE);
	/* let go just after the copy is found */
	WAIT_UNTIL(st_file_cached(f->st, &k1, &s1, 0, NEXT, &bytes,
				  &recs) == 0 && recs == 0);
	assert_int_equal(st_file_cached(f->st, &k1, &s1, 0, NEXT, &bytes,
					&recs), 0);
	assert_int_equal(recs, 0);
	assert_int_equal(st_file_cached(f->st, &k2, &s2, 0, NEXT, &bytes,
					&recs), 0);
	assert_int_equal(bytes, FSIZE);
	assert_int_equal(st_file_cached(f->st, &k3, &s3, 0, NEXT, &bytes,
					&recs), 0);
	assert_int_equal(bytes, FSIZE);
	st_get_stats(f->st, &ss);
	assert_int_equal(ss.invalidations[ST_INVAL_COPIED], NEXT);
	/* the copy serves the file's bytes all the same */
	fd = get(f, 1, 0, FSIZE, false);
	check_fd(fd, 1, 0, FSIZE);
	close(fd);
}

/* A file that looks whole to the store's count (the blocks within an
 * extent counted beside it) but misses a piece: the copy is given up
 * once, and not asked again for that stamp meanwhile. */
static void test_failed_not_retried(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(7), k8 = key_of(8);
	struct hotfs_stamp st7 = stamp_of(7, 0, FSIZE);
	uint8_t *buf = file_bytes(7, 0, FSIZE);
	uint64_t bytes, recs;
	struct fc_stats s;
	uint32_t b;

	f->fp.keep_records = keep_all;	/* 8 is copied twice */
	open_store(f);
	/* every extent but the tail (5000 bytes), and extent 0's first
	 * two blocks again as block records: counted 3,192 bytes over */
	insert_file(f, 7, 0, FSIZE, 0, 1ull << (NEXT - 1), UINT64_MAX);
	for (b = 0; b < 2; b++)
		assert_int_equal(st_insert(f->st, &k, ST_REC_BLOCK | b, &st7,
					   buf + b * ST_BLOCK, ST_BLOCK), 0);
	free(buf);
	assert_int_equal(st_file_cached(f->st, &k, &st7, 0, NEXT, &bytes,
					&recs), 0);
	assert_true(bytes >= FSIZE);
	insert_whole(f, 8, 0, FSIZE);
	open_copies(f, true);

	assert_int_equal(get(f, 7, 0, FSIZE, true), -ENOENT);
	make_copy(f, 8, 0, FSIZE);	/* after 7's job, in order */
	s = stats(f);
	assert_int_equal(s.failed, 1);
	assert_false(has(f, 7, 0, FSIZE));
	/* asked again: nothing queued (8's stale copy and a new job for
	 * another file show the queue moved on) */
	assert_int_equal(get(f, 7, 0, FSIZE, true), -ENOENT);
	assert_int_equal(fc_drop(f->cp, &k8), 1);
	make_copy(f, 8, 0, FSIZE);
	s = stats(f);
	assert_int_equal(s.failed, 1);
	assert_int_equal(files_in(f, NULL, NULL), 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_made_and_read),
		T(test_read),
		T(test_aged),
		T(test_from_blocks),
		T(test_stale_and_drop),
		T(test_max_bytes_coldest),
		T(test_store_reserve),
		T(test_reopen),
		T(test_scrub),
		T(test_queued_while_made),
		T(test_records_let_go),
		T(test_failed_not_retried),
	};
#undef T
	hotfs_log_level = LOG_CRIT;	/* the scrub's warning stays quiet */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
