// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the metadata snapshot (src/lib/meta.c): cachedir/meta
 * is on-disk metadata that hotfs answers lookups and getattr from, so a
 * damaged one must be rejected whole and an accepted one must be
 * consistent.
 *
 * The first input byte selects how the rest is fed: bit 0 appends the
 * XXH3 trailer the file ends with (computed over the rest), and bit 1
 * also writes a valid magic, version and payload length into the header,
 * so that the fuzzer spends its time on the records behind them rather
 * than on the checksum.
 *
 * Checked, beyond "no crash, no sanitizer report, no leak": an accepted
 * snapshot has the root's record first; each directory's parent comes
 * before it; entries are sorted, unique, found by meta_find, named
 * without '/' and are not "." or ".."; a directory entry with a record
 * names a directory record whose parent is this one, with the same name,
 * dev and ino; symlinks (and only they) have a non-empty target; the
 * counts add up.  And it survives a round trip: encoding what was
 * decoded gives a file that decodes, and encoding that again gives the
 * same bytes.
 *
 * Build: meson setup build-fuzz -Dfuzz=true (CC=clang); run:
 * tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_meta 15 tests/fuzz/corpus_meta
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "hotfs/meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR_BYTES	32	/* magic, version, ndirs, nents, 0, payload */

static void put_le(unsigned char *p, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static bool bad_name(const char *n)
{
	return !*n || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, "..");
}

static void check(const struct meta_snap *s)
{
	uint32_t i, j, total = 0;

	if (s->ndirs && (s->dirs[0].parent != META_NONE ||
			 s->dirs[0].st.st_ino != s->root.st_ino ||
			 s->dirs[0].st.st_dev != s->root.st_dev))
		abort();
	for (i = 0; i < s->ndirs; i++) {
		const struct meta_dir *d = &s->dirs[i];

		if (!S_ISDIR(d->st.st_mode))
			abort();
		if (i && (d->parent >= i || bad_name(d->name)))
			abort();
		total += d->n;
		for (j = 0; j < d->n; j++) {
			const struct meta_ent *e = &d->ents[j];

			if (bad_name(e->name) || meta_find(d, e->name) != e)
				abort();
			if (j && strcmp(d->ents[j - 1].name, e->name) >= 0)
				abort();
			if (S_ISLNK(e->st.st_mode) != (e->target != NULL) ||
			    (e->target && !*e->target))
				abort();
			if (e->sub == META_NONE)
				continue;
			if (e->sub <= i || e->sub >= s->ndirs ||
			    !S_ISDIR(e->st.st_mode) ||
			    s->dirs[e->sub].parent != i ||
			    strcmp(s->dirs[e->sub].name, e->name) ||
			    s->dirs[e->sub].st.st_dev != e->st.st_dev ||
			    s->dirs[e->sub].st.st_ino != e->st.st_ino)
				abort();
		}
	}
	if (total != s->nents)
		abort();
}

/* Encode s as the daemon would; NULL if it did not fit (it must). */
static void *encode(const struct meta_snap *s, size_t *len)
{
	struct meta_enc *e = meta_enc_new(&s->root, META_MAX_BYTES);
	uint32_t i, j;
	void *buf;

	if (!e)
		abort();
	for (i = 0; i < s->ndirs; i++) {
		const struct meta_dir *d = &s->dirs[i];

		if (meta_enc_dir(e, d->parent, i ? d->name : "", &d->st) != i)
			abort();
		for (j = 0; j < d->n; j++)
			if (!meta_enc_ent(e, d->ents[j].name, &d->ents[j].st,
					  d->ents[j].target))
				abort();
	}
	if (meta_enc_finish(e, &buf, len) != 0)
		abort();
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct meta_snap *s, *s2;
	unsigned char *buf;
	void *a, *b;
	size_t len, alen, blen;
	uint8_t how;
	int r;

	if (!size)
		return 0;
	how = data[0];
	data++;
	size--;
	len = size + (how & 1 ? 8 : 0);
	buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	if ((how & 3) == 3 && size >= HDR_BYTES) {
		memcpy(buf, META_MAGIC, 8);
		put_le(buf + 8, META_VERSION, 4);
		put_le(buf + 24, size - HDR_BYTES, 8);
	}
	if (how & 1)
		put_le(buf + size, XXH3_64bits(buf, size), 8);

	r = meta_decode(buf, len, &s);
	if (r != 0) {
		if (r != -EINVAL && r != -ENOMEM)
			abort();
		if (s)
			abort();
		free(buf);
		return 0;
	}
	check(s);
	a = encode(s, &alen);
	if (meta_decode(a, alen, &s2) != 0)
		abort();
	check(s2);
	if (s2->ndirs != s->ndirs || s2->nents != s->nents)
		abort();
	b = encode(s2, &blen);
	if (blen != alen || memcmp(a, b, alen))
		abort();
	meta_snap_free(s);
	meta_snap_free(s2);
	free(a);
	free(b);
	free(buf);
	return 0;
}
