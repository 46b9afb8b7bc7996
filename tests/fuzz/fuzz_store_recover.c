// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the cache store's on-disk metadata parsers and
 * recovery (src/store/store_recover.c).
 *
 * The first input byte picks what the rest is fed to:
 *	0: the superblock decoder;
 *	1: a region's summary chain (st_scan_region), fixed geometry;
 *	2: the same with a geometry taken from the input;
 *	3: a whole recovery: the bytes become the end of one region of a
 *	   real cachedir, which is opened (st_open), iterated, read through
 *	   st_read (verification must hold), written to and closed.
 * Bit 2 of the first byte "repairs" magic, epoch and checksums first, so
 * that the fuzzer gets past them to the field checks behind.
 *
 * Checked, beyond "no crash, no sanitizer report": every entry the parser
 * accepts lies inside the region's data area and the extent size, and a
 * superblock it accepts has a usable geometry.
 *
 * Build: meson setup build-fuzz -Dfuzz=true (CC=clang); run:
 * tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_store_recover 20
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/log.h"
#include "hotfs/store.h"
#include "src/store/store_i.h"

#define F_EXTENT	(64u * 1024)
#define F_RSIZE		(256u * 1024)
#define F_REGIONS	4u

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static uint64_t epoch;
static const char ident[] = "fuzz";

static struct hotfs_store_params params(void)
{
	struct hotfs_store_params p = {
		.ident = ident, .ident_len = sizeof(ident) - 1,
		.capacity = (uint64_t)F_REGIONS * F_RSIZE,
		.extent = F_EXTENT, .region = F_RSIZE,
		.commit_ms = 3600 * 1000, .commit_bytes = 1ull << 40,
	};

	return p;
}

static int rm_one(const char *path, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct hotfs_store_params p = params();
	struct hotfs_store *st;
	struct st_sb sb;
	char path[128];
	uint8_t buf[4096];
	int fd;

	(void)argc;
	(void)argv;
	hotfs_log_level = -1;
	strcpy(dir, "/tmp/hotfs-fuzz-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	if (st_open(dir, &p, &st, NULL, 0))
		abort();
	st_close(st);
	snprintf(path, sizeof(path), "%s/superblock", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf)) != sizeof(buf) ||
	    st_sb_decode(buf, sizeof(buf), &sb))
		abort();
	close(fd);
	epoch = sb.epoch;
	return 0;
}

/* Give each block of a tail our magic, epoch and a good checksum. */
static void repair(uint8_t *tail, size_t len, uint64_t ep)
{
	size_t i;

	for (i = 0; i + ST_BLOCK <= len; i += ST_BLOCK) {
		struct st_sumhdr h;

		memcpy(&h, tail + i, sizeof(h));
		h.magic = ST_SUM_MAGIC;
		h.epoch = ep;
		memcpy(tail + i, &h, sizeof(h));
		st_block_seal(tail + i);
	}
}

static int accepted(void *arg, const struct st_sument *e)
{
	const struct st_geom *g = arg;

	if (e->flags & ST_SE_TOMB)
		return 0;
	if (!e->len || e->len > g->extent ||
	    (uint64_t)e->off + st_reclen(e->len) > g->rsize ||
	    e->off % ST_ALIGN_SMALL)
		abort();
	return 0;
}

static void fuzz_sb(const uint8_t *data, size_t size, bool fix)
{
	uint8_t buf[sizeof(struct st_sb)];
	struct st_sb sb;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	if (fix) {
		struct st_sb *s = (struct st_sb *)buf;

		s->magic = ST_SB_MAGIC;
		s->csum = XXH3_64bits(s, offsetof(struct st_sb, csum));
	}
	if (st_sb_decode(buf, sizeof(buf), &sb))
		return;
	if (st_geom_ok(sb.extent, sb.rsize) || !sb.ident_len ||
	    sb.ident_len > ST_IDENT_MAX || sb.capacity < 2ull * sb.rsize)
		abort();
}

static void fuzz_scan(const uint8_t *data, size_t size, bool fix,
		      struct st_geom *g)
{
	size_t len = st_roundup(size ? size : 1, ST_BLOCK);
	struct st_scan res;
	uint8_t *tail;

	if (len > g->rsize)
		len = g->rsize;
	tail = calloc(1, len);
	memcpy(tail, data, size < len ? size : len);
	if (fix)
		repair(tail, len, g->epoch);
	if (!st_scan_region(tail, len, g, accepted, g, &res) &&
	    (res.data_end > g->rsize ||
	     (uint64_t)res.blocks * ST_BLOCK > len))
		abort();
	free(tail);
}

static int read_all(void *arg, const struct hotfs_extent_info *x)
{
	struct hotfs_extent_info *v = arg;
	unsigned *n = (unsigned *)&v[64];

	if (*n < 64)
		v[(*n)++] = *x;
	return 0;
}

static void fuzz_recover(const uint8_t *data, size_t size, bool fix)
{
	struct hotfs_store_params p = params();
	struct {
		struct hotfs_extent_info v[64];
		unsigned n;
	} found;
	struct hotfs_store *st;
	char path[128];
	uint8_t *img, *buf;
	uint32_t r = size ? data[0] % F_REGIONS : 0, i;
	size_t len;
	int fd;

	if (size)
		data++, size--;
	len = st_roundup(size ? size : 1, ST_BLOCK);
	if (len > F_RSIZE)
		len = F_RSIZE;
	img = calloc(1, (size_t)F_REGIONS * F_RSIZE);
	memcpy(img + (r + 1) * F_RSIZE - len, data, size < len ? size : len);
	if (fix)
		repair(img + (r + 1) * F_RSIZE - len, len, epoch);
	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, img, (size_t)F_REGIONS * F_RSIZE) < 0)
		abort();
	close(fd);
	free(img);

	if (st_open(dir, &p, &st, NULL, 0))
		abort();	/* damage must never make open fail */
	found.n = 0;
	st_iterate(st, read_all, &found);
	buf = malloc(F_EXTENT);
	for (i = 0; i < found.n; i++) {
		struct hotfs_extent_info *x = &found.v[i];
		struct hotfs_stamp s = { x->key.ino, 0, 0, 0 };
		ssize_t n;

		if (x->len > F_EXTENT || x->region >= F_REGIONS)
			abort();
		/* the stamp is unknown: a miss that drops the file */
		n = st_read(st, &x->key, x->extno, &s, 0, buf, F_EXTENT);
		if (n >= 0)
			abort();
	}
	{
		struct hotfs_key k = { 1, 2 };
		struct hotfs_stamp s = { 2, 3, 4, 5 };

		memset(buf, 7, 5000);
		if (!st_insert(st, &k, 0, &s, buf, 5000) &&
		    (st_read(st, &k, 0, &s, 0, buf, F_EXTENT) != 5000 ||
		     buf[4999] != 7))
			abort();
	}
	free(buf);
	st_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_geom g = { 0x1234, F_RSIZE, F_EXTENT };
	uint8_t mode;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	switch (mode & 3) {
	case 0:
		fuzz_sb(data, size, mode & 4);
		break;
	case 1:
		fuzz_scan(data, size, mode & 4, &g);
		break;
	case 2:
		if (size < 2)
			return 0;
		g.extent = ST_BLOCK << (data[0] % 11);
		g.rsize = st_roundup(2ull * st_reclen(g.extent) +
				     4ull * ST_BLOCK, ST_BLOCK) +
			(uint32_t)data[1] * ST_BLOCK;
		if (st_geom_ok(g.extent, g.rsize))
			abort();
		fuzz_scan(data + 2, size - 2, mode & 4, &g);
		break;
	case 3:
		fuzz_recover(data, size, mode & 4);
		break;
	}
	return 0;
}
