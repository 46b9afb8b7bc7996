// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * store_bench: the cache store's figures of merit, without FUSE.
 *
 *	store_bench [-d DIR] [-n EXTENTS] [-f FILES] [-b]
 *
 * 1. RAM per cached extent: EXTENTS (default 1,000,000) small extents
 *    inserted, index bytes (and the process's RSS growth) per extent;
 *    target <= 64 bytes (<= 24 a record with -b).
 * 2. Recovery time of that store: st_open after st_close, with the data
 *    file's pages dropped (cold) and cached (warm); target < 2 s.  The
 *    store API has no source path, so recovery cannot stat source files;
 *    the bench counts the files it opens to show it (/proc/self/fd).
 * 3. Space: FILES (default 20,000) files of 1-16 KiB, one extent each, in
 *    a fresh store: allocated bytes of the cachedir / payload bytes;
 *    target <= 1.3.
 * 4. Write amplification: bytes written to the SSD / payload bytes
 *    inserted, for both workloads; target <= 1.2.
 * With -b, 1. and 2. are measured for EXTENTS 4 KiB blocks of random
 * readers instead (block records of 1 GiB files, ST_REC_BLOCK): what a
 * store full of a VM image's blocks costs in RAM and at recovery.
 *
 * DIR (default: a new directory under /var/tmp, removed afterwards) must
 * be on the SSD to measure; the stores go to DIR/index and DIR/small.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hotfs/log.h"
#include "hotfs/store.h"

static const char ident[] = "store_bench";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int rm_one(const char *path, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Allocated bytes of the files in dir. */
static uint64_t du(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t sum = 0;
	char path[8192];
	struct stat sb;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!lstat(path, &sb) && S_ISREG(sb.st_mode))
			sum += (uint64_t)sb.st_blocks * 512;
	}
	closedir(d);
	return sum;
}

static void drop_cache(const char *dir)
{
	char path[8192];
	int fd;

	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3;	/* ., .., the DIR's own fd */
}

static struct hotfs_store *open_or_die(const char *dir,
				       struct hotfs_store_params *p)
{
	struct hotfs_store *st;
	char err[256] = "";
	int r = st_open(dir, p, &st, err, sizeof(err));

	if (r) {
		fprintf(stderr, "st_open %s: %s (%s)\n", dir, strerror(-r),
			err);
		exit(1);
	}
	return st;
}

static bool blocks;	/* -b: 4 KiB block records */

/* Record i of the index bench: a small extent (four a file), or with -b
 * a 4 KiB block (262,144 a file, scattered over it). */
static void rec_of(unsigned i, struct hotfs_key *k, struct hotfs_stamp *sp,
		   uint32_t *rec, uint32_t *len)
{
	unsigned per = blocks ? 262144 : 4;

	k->dev = 1;
	k->ino = 100 + i / per;
	sp->ino = k->ino;
	sp->size = blocks ? 1ull << 30 : 1000;
	sp->mtime_ns = 1;
	sp->ctime_ns = 2;
	/* blocks: a permutation of the file's, as random readers leave */
	*rec = blocks ? ST_REC_BLOCK | ((i % per) * 40503u % per) : i % per;
	*len = blocks ? 4096 : 64 + rnd() % 400;
}

static void bench_index(const char *base, unsigned n)
{
	struct hotfs_store_params p = {
		.ident = ident, .ident_len = sizeof(ident) - 1,
		.capacity = (uint64_t)n * (blocks ? 4608 : 640) +
			    (256ull << 20),
		.extent = 256 * 1024, .region = 16u << 20,
	};
	struct hotfs_store_stats s;
	struct hotfs_store *st;
	char dir[4096], buf[4096];
	double t0, t1, tw, c0, c1, cw;
	long rss0, rss1;
	unsigned i, hits = 0;
	int fds0, fds1;

	snprintf(dir, sizeof(dir), "%s/index", base);
	mkdir(dir, 0700);
	memset(buf, 0xa5, sizeof(buf));
	p.reset = true;
	st = open_or_die(dir, &p);
	p.reset = false;
	rss0 = rss_kib();
	t0 = now();
	for (i = 0; i < n; i++) {
		struct hotfs_key k;
		struct hotfs_stamp sp;
		uint32_t rec, len;

		rec_of(i, &k, &sp, &rec, &len);
		if (st_insert(st, &k, rec, &sp, buf, len)) {
			fprintf(stderr, "insert %u failed\n", i);
			exit(1);
		}
	}
	st_commit(st);
	t1 = now();
	rss1 = rss_kib();
	st_get_stats(st, &s);
	printf("index: %u %s inserted in %.2f s (%.0f/s)\n", n,
	       blocks ? "4 KiB blocks" : "small extents", t1 - t0,
	       n / (t1 - t0));
	/* issue 22: 24 bytes a 4 KiB block record; small extents (four a
	 * file) also pay for their files (hotfs(8), The cache store) */
	printf("  RAM per extent: %.1f bytes (index structures), "
	       "%.1f bytes (RSS growth)   [target <= %d]\n",
	       (double)s.index_bytes / s.extents,
	       (rss1 - rss0) * 1024.0 / s.extents, blocks ? 24 : 64);
	printf("  write amplification (small extents): %.3f\n",
	       (double)s.bytes_written / s.bytes_inserted);

	t0 = now();
	for (i = 0; i < n; i++) {
		unsigned j = rnd() % n;
		struct hotfs_key k;
		struct hotfs_stamp sp;
		struct hotfs_loc loc;
		uint32_t rec, len;

		rec_of(j, &k, &sp, &rec, &len);
		hits += !st_lookup(st, &k, rec, &sp, &loc);
	}
	t1 = now();
	printf("  lookups: %.0f/s (one thread), %u/%u hit\n", n / (t1 - t0),
	       hits, n);
	st_close(st);

	/* recovery, cold then warm */
	drop_cache(dir);
	fds0 = count_fds();
	c0 = cpu_now();
	t0 = now();
	st = open_or_die(dir, &p);
	t1 = now();
	c1 = cpu_now();
	fds1 = count_fds();
	st_get_stats(st, &s);
	st_close(st);
	t0 = t1 - t0;
	c0 = c1 - c0;
	st = open_or_die(dir, &p);
	st_close(st);
	t1 = now();
	c1 = cpu_now();
	st = open_or_die(dir, &p);
	tw = now() - t1;
	cw = cpu_now() - c1;
	st_close(st);
	printf("recovery: %llu extents in %.3f s cold (%.3f s CPU), %.3f s "
	       "warm (%.3f s CPU)   [target < 2 s]\n",
	       (unsigned long long)s.extents_recovered, t0, c0, tw, cw);
	printf("  files the store holds open: %d (cachedir, lock, data)\n",
	       fds1 - fds0);
}

static void bench_small_files(const char *base, unsigned nfiles)
{
	struct hotfs_store_params p = {
		.ident = ident, .ident_len = sizeof(ident) - 1,
		.capacity = 4ull << 30, .extent = 256 * 1024,
	};
	struct hotfs_store_stats s;
	struct hotfs_store *st;
	uint64_t payload = 0, alloc;
	char dir[4096];
	static char buf[16384];
	unsigned i;

	snprintf(dir, sizeof(dir), "%s/small", base);
	mkdir(dir, 0700);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rnd();
	p.reset = true;
	st = open_or_die(dir, &p);
	for (i = 0; i < nfiles; i++) {
		struct hotfs_key k = { 1, 1 + i };
		struct hotfs_stamp sp = { 1 + i, 1000, 1, 2 };
		uint32_t len = 1024 + rnd() % (15 * 1024 + 1);

		if (st_insert(st, &k, 0, &sp, buf, len)) {
			fprintf(stderr, "insert %u failed\n", i);
			exit(1);
		}
		payload += len;
	}
	st_commit(st);
	st_get_stats(st, &s);
	st_close(st);
	alloc = du(dir);
	printf("small files: %u files of 1-16 KiB, %.1f MiB of payload\n",
	       nfiles, payload / 1048576.0);
	printf("  space: %.1f MiB allocated in the cachedir = %.3fx   "
	       "[target <= 1.3]\n", alloc / 1048576.0,
	       (double)alloc / payload);
	printf("  write amplification: %.3f (%.1f MiB written)   "
	       "[target <= 1.2]\n", (double)s.bytes_written / payload,
	       s.bytes_written / 1048576.0);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/var/tmp/hotfs-store-bench-XXXXXX";
	const char *base = NULL;
	unsigned n = 1000000, nfiles = 20000;
	bool made = false;
	int c;

	while ((c = getopt(argc, argv, "d:n:f:b")) != -1) {
		switch (c) {
		case 'b':
			blocks = true;
			break;
		case 'd':
			base = optarg;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			nfiles = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-d DIR] [-n EXTENTS] "
				"[-f FILES] [-b]\n", argv[0]);
			return 2;
		}
	}
	if (!base) {
		base = mkdtemp(tmpl);
		made = true;
	} else if (mkdir(base, 0700) && errno != EEXIST) {
		perror(base);
		return 1;
	}
	if (!base) {
		perror("mkdtemp");
		return 1;
	}
	hotfs_log_level = LOG_WARNING;
	printf("store_bench in %s\n", base);
	if (!blocks)
		bench_small_files(base, nfiles);
	bench_index(base, n);
	if (made)
		nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
