// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the writeback log's replay (wblog_open.c): the
 * log of a crashed mount is read back from the cachedir, and a damaged
 * one must be refused, or replayed (a torn tail dropped, damage read
 * around, its blocks lost), never crash the daemon nor send it past its
 * buffers.
 *
 * A template log is made once with the real writer: records of two files,
 * a trim, partial blocks, and the cleaner's packed records (a small log
 * filled past its size).  Each input patches it: the first byte holds
 * flags (bit 0: recompute every record's checksum and both headers'
 * after patching, so that the fuzzer gets past them to the field checks
 * behind), then 4-byte patches (a 24-bit position in the file, a byte
 * XORed in there).  The patched file is opened; a log that opens is read
 * through (every file's dirty bytes laid over a buffer), flushed whole
 * and released, and checked: its space in use within its capacity, the
 * dirty bytes of each file within its dirty end, nothing dirty left but
 * lost blocks.
 *
 * Build: meson setup build-fuzz -Dfuzz=true (CC=clang); run:
 * tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_wblog 20 tests/fuzz/corpus_wblog
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/wblog.h"
#include "src/writeback/wblog_i.h"

#define F_CAP		(256u * WB_BLOCK)
#define F_FILE_MAX	(1u << 20)	/* a file's bytes looked at */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static int dfd = -1;
static char *tmpl;
static size_t tmpl_len;

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "fuzz_wblog: %s\n", what);
	abort();
}

static void put(struct wblog *wl, uint64_t ino, uint64_t off, int c,
		size_t n)
{
	struct wb_fid f = { 1, ino, 0 };
	char b[3 * WB_BLOCK];

	memset(b, c, n);
	if (wblog_write(wl, &f, off, b, n, NULL, NULL, NULL) != (ssize_t)n)
		die("template write");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct wblog *wl;
	struct stat sb;
	char path[96];
	uint64_t i;
	int fd;

	(void)argc;
	(void)argv;
	/* tmpfs where there is one: each open syncs the directory */
	snprintf(dir, sizeof(dir), "%s/hotfs-fuzz-wblog-%d",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", (int)getpid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		die("mkdir");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || wblog_open(dfd, F_CAP, &wl, NULL, 0))
		die("open");
	put(wl, 100, 10, 'a', 100);
	put(wl, 200, 4000, 'b', 2 * WB_BLOCK);
	if (wblog_trim(wl, &(struct wb_fid){ 1, 200, 0 }, 6000))
		die("trim");
	/* one block each, apart: past the log's size, so the cleaner packs
	 * them */
	for (i = 0; i < 130; i++)
		put(wl, 300, i * 2 * WB_BLOCK + 7, (int)('c' + i % 20), 300);
	if (wblog_sync(wl, 0))
		die("sync");
	wblog_close(wl);
	snprintf(path, sizeof(path), "%s/%s", dir, WB_LOG_NAME);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &sb))
		die("template");
	tmpl_len = (size_t)sb.st_size;
	tmpl = malloc(tmpl_len);
	if (!tmpl || read(fd, tmpl, tmpl_len) != (ssize_t)tmpl_len)
		die("template read");
	close(fd);
	return 0;
}

/* Checksums made right again after the patches (flag bit 0): the
 * headers', and each record's (its data blocks' and its header's, seeded
 * with the salt the newer header slot gives). */
static void repair(char *img, size_t len)
{
	uint64_t nblocks = (len - WL_HDR_BLOCKS * WB_BLOCK) / WB_BLOCK, b;
	uint64_t salt = 0, gen = 0;
	unsigned k;

	for (k = 0; k < WL_HDR_BLOCKS; k++) {
		struct wl_super s;

		memcpy(&s, img + k * WB_BLOCK, sizeof(s));
		s.csum = wl_super_csum(&s);
		memcpy(img + k * WB_BLOCK, &s, sizeof(s));
		if (!k || s.gen > gen) {
			gen = s.gen;
			salt = s.salt;
		}
	}
	for (b = 0; b < nblocks; b++) {
		char *hb = img + (WL_HDR_BLOCKS + b) * WB_BLOCK;
		struct wl_rec h;
		uint32_t i;

		memcpy(&h, hb, sizeof(h));
		if (memcmp(h.magic, WR_MAGIC, 8) || h.nblk > nblocks - b - 1 ||
		    h.nblk > WB_REC_MAX / WB_BLOCK ||
		    (h.type == WR_MULTI && h.nblk > WL_MULTI_MAX))
			continue;
		for (i = 0; (h.type == WR_DATA || h.type == WR_MULTI) &&
			    i < h.nblk; i++) {
			uint64_t sum = wl_blk_csum(hb + (i + 1) * WB_BLOCK);

			memcpy(hb + wl_sums_at(&h) + i * sizeof(sum), &sum,
			       sizeof(sum));
		}
		h.csum = wl_hdr_csum(hb, salt);
		memcpy(hb, &h, sizeof(h));
	}
}

/*
 * A header whose area was patched to many times the log's and checksummed
 * again (flag bit 0): the open trusts a header that passes its checksum
 * for the area's size and writes the file out to it (zeros, gigabytes
 * for a high byte): not a defect, but the fuzzer's time.  Such inputs
 * are skipped; random damage of a header fails its checksum (the inputs
 * without the flag reach that).
 */
static bool huge_area(const char *img)
{
	unsigned k;

	for (k = 0; k < WL_HDR_BLOCKS; k++) {
		struct wl_super s;

		memcpy(&s, img + k * WB_BLOCK, sizeof(s));
		if (s.nblocks > 16 * (F_CAP / WB_BLOCK))
			return true;
	}
	return false;
}

static void check(struct wblog *wl)
{
	static char buf[F_FILE_MAX];
	struct wblog_stats s;
	struct wb_fid *files;
	struct wb_run r;
	size_t n, i;
	int k;

	wblog_stats(wl, &s);
	if (s.log_used > s.log_capacity)
		die("more of the log in use than it holds");
	n = wblog_files(wl, &files);
	for (i = 0; i < n; i++) {
		uint64_t end = wblog_dirty_end(wl, &files[i]);
		size_t len = end < sizeof(buf) ? (size_t)end : sizeof(buf);
		ssize_t got;

		memset(buf, 0, len);
		got = wblog_overlay(wl, &files[i], 0, buf, len);
		/* lost blocks: an error, no other */
		if (got < 0 ? got != -EBADMSG && got != -EIO :
		    (size_t)got > len)
			die("overlay");
	}
	free(files);
	while ((k = wblog_flush_next(wl, 0, 1 << 20, NULL, &r)) >= 1)
		if (k == 1)
			wblog_flush_done(wl, &r, 0);
	if (wblog_release(wl))
		die("release");
	wblog_stats(wl, &s);
	if (s.dirty_bytes != s.lost_held_bytes ||
	    s.dirty_blocks != s.lost_blocks || s.dirty_files != s.lost_files)
		die("dirty data left after a whole flush, not lost");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[96], *img;
	struct wblog *wl;
	size_t i;
	int fd;

	if (!size)
		return 0;
	img = malloc(tmpl_len);
	if (!img)
		return 0;
	memcpy(img, tmpl, tmpl_len);
	for (i = 1; i + 4 <= size; i += 4) {
		size_t pos = ((size_t)data[i] | (size_t)data[i + 1] << 8 |
			      (size_t)data[i + 2] << 16) % tmpl_len;

		img[pos] ^= (char)data[i + 3];
	}
	if (data[0] & 1)
		repair(img, tmpl_len);
	if (huge_area(img)) {
		free(img);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, WB_LOG_NAME);
	fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0600);
	if (fd < 0 || write(fd, img, tmpl_len) != (ssize_t)tmpl_len)
		die("write the image");
	close(fd);
	free(img);
	if (wblog_open(dfd, F_CAP, &wl, NULL, 0) == 0) {
		check(wl);
		wblog_close(wl);
	}
	return 0;
}
