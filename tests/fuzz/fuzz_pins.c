// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the pins file (src/cache/pins.c): cachedir/pins is
 * on-disk metadata, "hotfs-pins 1" then one "dev ino" pair per line, and
 * may be damaged or written by hand.
 *
 * The input becomes the pins file of a scratch cachedir (on /dev/shm when
 * there is one: the save below fsyncs), which pins_open loads.  If the
 * first byte has bit 0 set, the header is written first, so that the
 * fuzzer spends its time on the lines behind it.
 *
 * Checked, beyond "no crash, no sanitizer report, no leak": loading never
 * fails because of the file's contents; a file without the exact header
 * loads no pin; no more pins than lines; and what was loaded survives a
 * save and a reload: pinning one more key and reopening gives the same
 * set plus that key, and unpinning it gives the set back.
 *
 * Build: meson setup build-fuzz -Dfuzz=true (CC=clang); run:
 * tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_pins 10 tests/fuzz/corpus_pins
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/log.h"
#include "hotfs/pins.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char path[96];
static const char header[] = "hotfs-pins 1\n";

static int rm_one(const char *p, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static void cleanup(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct stat st;

	(void)argc;
	(void)argv;
	hotfs_log_level = -1;	/* "pins: unknown format" on every input */
	strcpy(dir, stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ?
	       "/dev/shm/hotfs-fuzz-XXXXXX" : "/tmp/hotfs-fuzz-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/pins", dir);
	return 0;
}

static void write_pins(const uint8_t *data, size_t size, bool hdr)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 ||
	    (hdr && write(fd, header, sizeof(header) - 1) !=
	     (ssize_t)sizeof(header) - 1) ||
	    (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}

static struct hotfs_pins *open_pins(void)
{
	struct hotfs_pins *p;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0 || pins_open(&p, dfd, false) != 0)
		abort();	/* the contents must never make it fail */
	close(dfd);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a key the input is unlikely to spell... */
	struct hotfs_key extra = { UINT64_MAX - 7, UINT64_MAX - 3 };
	struct hotfs_pins *p;
	size_t n, lines = 0, i;
	bool hdr;

	if (!size)
		return 0;
	hdr = data[0] & 1;
	data++;
	size--;
	write_pins(data, size, hdr);
	for (i = 0; i < size; i++)
		lines += data[i] == '\n';

	p = open_pins();
	n = pins_count(p);
	if (n > lines)
		abort();
	if (!hdr && n && (size < sizeof(header) - 1 ||
			  memcmp(data, header, sizeof(header) - 1) != 0))
		abort();
	/* ...and if it does, it is already in */
	if (pins_has(p, &extra))
		n--;
	if (pins_set(p, &extra, true) != 0 || !pins_has(p, &extra) ||
	    pins_count(p) != n + 1)
		abort();
	pins_close(p);

	p = open_pins();
	if (pins_count(p) != n + 1 || !pins_has(p, &extra))
		abort();
	if (pins_set(p, &extra, false) != 0 || pins_has(p, &extra) ||
	    pins_count(p) != n)
		abort();
	pins_close(p);

	p = open_pins();
	if (pins_count(p) != n || pins_has(p, &extra))
		abort();
	pins_close(p);
	return 0;
}
