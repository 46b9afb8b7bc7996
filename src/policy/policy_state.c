// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy's access counts in the cachedir (see
 * include/hotfs/policy_state.h).
 *
 * The buffers are mapped, not malloc'd: the state is 4 MiB by default,
 * and a heap that kept it after each save would keep the daemon's
 * resident size that much higher for nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <xxhash.h>

#include "hotfs/fileio.h"
#include "hotfs/meta.h"
#include "hotfs/policy_state.h"

#define MAGIC		"HOTFSCNT"
#define VERSION		1u
#define HDR		32	/* magic, version + pad, tag, state length */
#define TRAILER		8	/* xxh3 of everything before it */

static void put64(unsigned char *b, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *b)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static void *map(size_t len)
{
	void *b = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return b == MAP_FAILED ? NULL : b;
}

int pol_state_encode(struct hotfs_policy *p, uint64_t tag, void **bufp,
		     size_t *lenp)
{
	size_t n = pol_state_size(p), len = HDR + n + TRAILER;
	unsigned char *b = map(len);

	if (!b)
		return -ENOMEM;
	memcpy(b, MAGIC, 8);
	put64(b + 8, VERSION);
	put64(b + 16, tag);
	put64(b + 24, n);
	pol_export(p, b + HDR);
	put64(b + HDR + n, XXH3_64bits(b, HDR + n));
	*bufp = b;
	*lenp = len;
	return 0;
}

int pol_state_decode(struct hotfs_policy *p, uint64_t tag, const void *buf,
		     size_t len, char *why, size_t whylen)
{
	const unsigned char *b = buf;
	uint64_t n;

	if (len < HDR + TRAILER || memcmp(b, MAGIC, 8) != 0) {
		snprintf(why, whylen, "not a counts file");
		return -EINVAL;
	}
	n = get64(b + 24);
	if (n != len - HDR - TRAILER ||
	    get64(b + HDR + n) != XXH3_64bits(b, HDR + n)) {
		snprintf(why, whylen, "checksum mismatch");
		return -EINVAL;
	}
	if (get64(b + 8) != VERSION) {
		snprintf(why, whylen, "version %llu unknown",
			 (unsigned long long)get64(b + 8));
		return -EINVAL;
	}
	if (get64(b + 16) != tag) {
		snprintf(why, whylen, "counted for another source or extent size");
		return -EINVAL;
	}
	if (pol_import(p, b + HDR, n) < 0) {
		snprintf(why, whylen, "counted with another sketch size");
		return -EINVAL;
	}
	return 0;
}

int pol_state_save(struct hotfs_policy *p, int dirfd, uint64_t tag)
{
	void *buf;
	size_t len;
	int r = pol_state_encode(p, tag, &buf, &len);

	if (r < 0)
		return r;
	r = file_replace_at(dirfd, POL_STATE_FILE, buf, len);
	munmap(buf, len);
	return r;
}

int pol_state_load(struct hotfs_policy *p, int dirfd, uint64_t tag,
		   char *why, size_t whylen)
{
	void *buf;
	size_t len;
	int r;

	r = meta_read_file(dirfd, POL_STATE_FILE,
			   HDR + pol_state_size(p) + TRAILER, &buf, &len);
	if (r == -EFBIG) {
		snprintf(why, whylen, "counted with another sketch size");
		return -EINVAL;
	}
	if (r < 0) {
		snprintf(why, whylen, "%s", file_private_why(r));
		return r;
	}
	r = pol_state_decode(p, tag, buf, len, why, whylen);
	free(buf);
	return r;
}
