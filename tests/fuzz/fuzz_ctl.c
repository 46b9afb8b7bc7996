// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the control channel's parsers (src/lib/ctl_parse.c):
 * what a caller writes to .hotfs/ctl, and hotfsctl's ioctl requests.
 *
 * The first input byte picks what the rest is fed to:
 *	0: ctl_parse_cmd, with a command buffer of 4096 bytes (the daemon's)
 *	   or, if bit 2 is set, of 1 + the second byte % 64;
 *	1: ctl_ioc_decode: command (4 bytes), flags (4), in and out buffer
 *	   sizes (1 byte each, times 8), then the payload;
 *	2: ctl_ioc_extents: a struct hotfs_ioc, a file size (8 bytes) and
 *	   an extent shift (16..22, the extent sizes -o extent= allows);
 *	3: ctl_parse_set, on the rest up to its first NUL.
 *
 * Checked, beyond "no crash, no sanitizer report": a command is
 * recognised exactly when the bytes, without trailing newlines and
 * spaces, are its name; the copy is NUL-terminated inside the buffer;
 * "set" accepts all of a list or none of it, with values in range, and
 * otherwise says why in a NUL-terminated line;
 * the decoder refuses what the handler must refuse and copies exactly
 * one struct otherwise; the extents of a request are exactly those its
 * range touches, computed in 64 bits, and never numbered past
 * ST_EXT_LIMIT (extent numbers are 32-bit: the cache does not go there).
 *
 * Build: meson setup build-fuzz -Dfuzz=true (CC=clang); run:
 * tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_ctl 10 tests/fuzz/corpus_ctl
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hotfs/ctl.h"
#include "hotfs/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void fuzz_cmd(const uint8_t *data, size_t size, uint8_t mode)
{
	static char cmd[4096];
	size_t cmdsz = sizeof(cmd), n;
	int r;

	if ((mode & 4) && size) {
		cmdsz = 1 + data[0] % 64;
		data++;
		size--;
	}
	memset(cmd, 'x', sizeof(cmd));
	r = ctl_parse_cmd((const char *)data, size, cmd, cmdsz);
	if (size >= cmdsz) {
		if (r != -E2BIG)
			abort();
		return;
	}
	if (memchr(cmd, '\0', cmdsz) == NULL)
		abort();
	/* the bytes up to the first NUL, trailing newlines and spaces cut */
	n = size;
	while (n && (data[n - 1] == '\n' || data[n - 1] == ' '))
		n--;
	if (memcmp(cmd, data, n) != 0 || cmd[n] != '\0')
		abort();
	if ((r == CTL_RESET_STATS) !=
	    (n == 11 && memcmp(data, "reset-stats", 11) == 0))
		abort();
	if ((r == CTL_STORE_ON) !=
	    (n == 8 && memcmp(data, "store on", 8) == 0))
		abort();
	if ((r == CTL_SET) != (n > 4 && memcmp(data, "set ", 4) == 0 &&
			       !memchr(data, '\0', n)))
		abort();
	if (r != CTL_RESET_STATS && r != CTL_STORE_ON && r != CTL_SET &&
	    r != -EINVAL)
		abort();
}

static void fuzz_set(const uint8_t *data, size_t size)
{
	char *args = malloc(size + 1), err[300];
	struct ctl_set s;
	int r;

	if (!args)
		return;
	memcpy(args, data, size);
	args[size] = '\0';
	memset(err, 'x', sizeof(err));
	r = ctl_parse_set(args, &s, err, sizeof(err));
	if (r == 0) {
		unsigned keys = 0;

		for (size_t i = 0; i < ctl_nkeys; i++)
			keys |= ctl_keys[i].mask;
		if (!s.mask || (s.mask & ~keys))
			abort();
		if ((s.mask & CTL_SET_THRESHOLD) &&
		    (s.threshold < 1 || s.threshold > 16))
			abort();
		if ((s.mask & CTL_SET_WRITEMODE) && s.writemode != 0 &&
		    s.writemode != 1)
			abort();
		if ((s.mask & CTL_SET_INODE_CACHE) &&
		    (s.inode_cache < 1 || s.inode_cache > 10000000))
			abort();
		if ((s.mask & CTL_SET_DIRTY_HIGH) &&
		    (s.dirty_high < 1 || s.dirty_high > 99))
			abort();
		if ((s.mask & CTL_SET_DIRTY_LOW) &&
		    (s.dirty_low < 1 || s.dirty_low > 99))
			abort();
	} else if (r != -EINVAL || s.mask || !memchr(err, '\0', sizeof(err)) ||
		   !err[0]) {
		abort();
	}
	free(args);
}

static void fuzz_decode(const uint8_t *data, size_t size)
{
	struct hotfs_ioc io, want;
	unsigned int cmd, flags;
	size_t insz, outsz;
	uint8_t *in;
	int r;

	if (size < 10)
		return;
	memcpy(&cmd, data, 4);
	memcpy(&flags, data + 4, 4);
	insz = (size_t)data[8] * 8;
	outsz = (size_t)data[9] * 8;
	data += 10;
	size -= 10;
	/* the handler is given at least in_bufsz bytes */
	in = calloc(1, insz + 1);
	memcpy(in, data, size < insz ? size : insz);
	memset(&io, 0xa5, sizeof(io));
	r = ctl_ioc_decode(cmd, flags, in, insz, outsz, &io);
	if (_IOC_TYPE(cmd) != 'H') {
		if (r != -ENOTTY)
			abort();
	} else if ((flags & FUSE_IOCTL_COMPAT) || insz < sizeof(io) ||
		   outsz < sizeof(io)) {
		if (r != -EINVAL)
			abort();
	} else {
		memcpy(&want, in, sizeof(want));
		if (r != 0 || memcmp(&io, &want, sizeof(io)) != 0)
			abort();
	}
	free(in);
}

static void fuzz_extents(const uint8_t *data, size_t size)
{
	struct hotfs_ioc io;
	uint64_t fsize, end, r0, r1;
	unsigned int shift;
	uint32_t e0, e1;

	if (size < sizeof(io) + 9)
		return;
	memcpy(&io, data, sizeof(io));
	fsize = get64(data + sizeof(io));
	shift = 16 + data[sizeof(io) + 8] % 7;
	/* the sizes of real files: at most 2^63 - 1 */
	fsize &= INT64_MAX;
	ctl_ioc_extents(&io, fsize, shift, &e0, &e1);

	end = io.len ? io.off + io.len : fsize;
	if (end > fsize || end < io.off)
		end = fsize;
	r0 = io.off >> shift;
	r1 = io.off >= end ? r0 : ((end - 1) >> shift) + 1;
	if (e0 > e1 || e1 > ST_EXT_LIMIT)
		abort();
	if (r1 <= ST_EXT_LIMIT) {
		/* exactly the extents the range touches */
		if (e0 != r0 || e1 != r1)
			abort();
	} else if (e0 < e1 && (e0 < r0 || e1 > r1)) {
		/* past the limit: a part of them, or none */
		abort();
	}
	/* each one starts inside the file */
	if (e0 < e1 && ((uint64_t)(e1 - 1) << shift) >= fsize)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	switch (mode & 3) {
	case 0:
		fuzz_cmd(data, size, mode);
		break;
	case 1:
		fuzz_decode(data, size);
		break;
	case 2:
		fuzz_extents(data, size);
		break;
	case 3:
		fuzz_set(data, size);
		break;
	}
	return 0;
}
