// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The metadata snapshot's format (see include/hotfs/meta.h): encoding,
 * validating decoding, and crash-safe file I/O.  Nothing here touches the
 * source; src/core/meta_fs.c decides what goes in and when it is trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/fileio.h"
#include "hotfs/meta.h"
#include "hotfs/store.h"

#define HDR_BYTES	(8 + 4 * 4 + 8)
#define STAT_BYTES	(13 * 8)

/* ------------------------------------------------------------------ */
/* Encoding */

struct meta_enc {
	unsigned char *buf;
	size_t len, cap, max;
	uint32_t ndirs, nents;
	/* the open directory: its record's start, entry count's offset */
	size_t dir_start, dir_count_off;
	uint32_t dir_n, dir_ents_before;
	bool in_dir, failed;
};

static bool reserve(struct meta_enc *e, size_t more)
{
	unsigned char *nb;
	size_t ncap;

	if (e->len + more + 8 > e->max)
		return false;
	if (e->len + more <= e->cap)
		return true;
	ncap = e->cap ? e->cap * 2 : 65536;
	while (ncap < e->len + more)
		ncap *= 2;
	nb = realloc(e->buf, ncap);
	if (!nb)
		return false;
	e->buf = nb;
	e->cap = ncap;
	return true;
}

static void put_le(unsigned char *p, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put(struct meta_enc *e, uint64_t v, unsigned n)
{
	put_le(e->buf + e->len, v, n);
	e->len += n;
}

static int64_t tsns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static void put_stat(struct meta_enc *e, const struct stat *st)
{
	put(e, st->st_dev, 8);
	put(e, st->st_ino, 8);
	put(e, st->st_mode, 8);
	put(e, st->st_nlink, 8);
	put(e, st->st_uid, 8);
	put(e, st->st_gid, 8);
	put(e, st->st_rdev, 8);
	put(e, (uint64_t)st->st_size, 8);
	put(e, (uint64_t)st->st_blksize, 8);
	put(e, (uint64_t)st->st_blocks, 8);
	put(e, (uint64_t)tsns(&st->st_atim), 8);
	put(e, (uint64_t)tsns(&st->st_mtim), 8);
	put(e, (uint64_t)tsns(&st->st_ctim), 8);
}

static void ns_ts(struct timespec *ts, int64_t ns)
{
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000LL;
		ts->tv_sec--;
	}
}

static void get_stat(const unsigned char *p, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = get_le(p, 8);
	st->st_ino = get_le(p + 8, 8);
	st->st_mode = (mode_t)get_le(p + 16, 8);
	st->st_nlink = get_le(p + 24, 8);
	st->st_uid = (uid_t)get_le(p + 32, 8);
	st->st_gid = (gid_t)get_le(p + 40, 8);
	st->st_rdev = get_le(p + 48, 8);
	st->st_size = (off_t)get_le(p + 56, 8);
	st->st_blksize = (blksize_t)get_le(p + 64, 8);
	st->st_blocks = (blkcnt_t)get_le(p + 72, 8);
	ns_ts(&st->st_atim, (int64_t)get_le(p + 80, 8));
	ns_ts(&st->st_mtim, (int64_t)get_le(p + 88, 8));
	ns_ts(&st->st_ctim, (int64_t)get_le(p + 96, 8));
}

struct meta_enc *meta_enc_new(const struct stat *root, size_t max_bytes)
{
	struct meta_enc *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->max = max_bytes;
	if (!reserve(e, HDR_BYTES + STAT_BYTES)) {
		meta_enc_free(e);
		return NULL;
	}
	memcpy(e->buf, META_MAGIC, 8);
	e->len = HDR_BYTES;		/* counts filled in at the end */
	put_stat(e, root);
	return e;
}

static void close_dir(struct meta_enc *e)
{
	if (!e->in_dir)
		return;
	put_le(e->buf + e->dir_count_off, e->dir_n, 4);
	e->in_dir = false;
}

void meta_enc_drop_dir(struct meta_enc *e)
{
	if (!e->in_dir)
		return;
	e->len = e->dir_start;
	e->nents = e->dir_ents_before;
	e->ndirs--;
	e->in_dir = false;
}

uint32_t meta_enc_dir(struct meta_enc *e, uint32_t parent, const char *name,
		      const struct stat *st)
{
	size_t nl = strlen(name);

	close_dir(e);
	if (nl > UINT16_MAX || e->ndirs == META_NONE - 1 ||
	    !reserve(e, 4 + 2 + nl + STAT_BYTES + 4))
		return META_NONE;
	e->dir_start = e->len;
	e->dir_ents_before = e->nents;
	put(e, parent, 4);
	put(e, nl, 2);
	memcpy(e->buf + e->len, name, nl);
	e->len += nl;
	put_stat(e, st);
	e->dir_count_off = e->len;
	put(e, 0, 4);
	e->dir_n = 0;
	e->in_dir = true;
	return e->ndirs++;
}

bool meta_enc_ent(struct meta_enc *e, const char *name, const struct stat *st,
		  const char *target)
{
	size_t nl = strlen(name);
	size_t tl = target ? strlen(target) : 0;

	if (!e->in_dir)
		return false;
	if (nl == 0 || nl > UINT16_MAX || e->nents == META_NONE - 1 ||
	    S_ISLNK(st->st_mode) != (target != NULL) || tl > UINT16_MAX ||
	    (target && !tl) || !reserve(e, 2 + nl + STAT_BYTES + 2 + tl)) {
		meta_enc_drop_dir(e);
		return false;
	}
	put(e, nl, 2);
	memcpy(e->buf + e->len, name, nl);
	e->len += nl;
	put_stat(e, st);
	if (target) {
		put(e, tl, 2);
		memcpy(e->buf + e->len, target, tl);
		e->len += tl;
	}
	e->dir_n++;
	e->nents++;
	return true;
}

int meta_enc_finish(struct meta_enc *e, void **buf, size_t *len)
{
	unsigned char *b;

	close_dir(e);
	if (e->len + 8 > e->cap) {
		b = realloc(e->buf, e->len + 8);
		if (!b) {
			meta_enc_free(e);
			return -ENOMEM;
		}
		e->buf = b;
		e->cap = e->len + 8;
	}
	b = e->buf;
	put_le(b + 8, META_VERSION, 4);
	put_le(b + 12, e->ndirs, 4);
	put_le(b + 16, e->nents, 4);
	put_le(b + 20, 0, 4);
	put_le(b + 24, e->len - HDR_BYTES, 8);
	put_le(b + e->len, XXH3_64bits(b, e->len), 8);
	*buf = b;
	*len = e->len + 8;
	e->buf = NULL;
	meta_enc_free(e);
	return 0;
}

void meta_enc_free(struct meta_enc *e)
{
	if (!e)
		return;
	free(e->buf);
	free(e);
}

/* ------------------------------------------------------------------ */
/* Decoding */

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct meta_ent *)a)->name,
		      ((const struct meta_ent *)b)->name);
}

const struct meta_ent *meta_find(const struct meta_dir *d, const char *name)
{
	struct meta_ent key = { .name = name };

	if (!d->n)
		return NULL;
	return bsearch(&key, d->ents, d->n, sizeof(key), cmp_ent);
}

void meta_snap_free(struct meta_snap *s)
{
	if (!s)
		return;
	free(s->dirs);
	free(s->ents);
	free(s->names);
	free(s);
}

/* A cursor over the payload that never reads past its end. */
struct cur {
	const unsigned char *p, *end;
	bool bad;
};

static const unsigned char *take(struct cur *c, size_t n)
{
	const unsigned char *p = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return p;
}

static uint64_t take_le(struct cur *c, unsigned n)
{
	const unsigned char *p = take(c, n);

	return p ? get_le(p, n) : 0;
}

/* A name: copied NUL-terminated into *np; NULL if not a valid name. */
static const char *take_name(struct cur *c, char **np, bool may_be_empty)
{
	size_t n = (size_t)take_le(c, 2);
	const unsigned char *p = take(c, n);
	char *dst = *np;

	if (!p || (!n && !may_be_empty) || memchr(p, '/', n) ||
	    memchr(p, '\0', n) || (n == 1 && p[0] == '.') ||
	    (n == 2 && p[0] == '.' && p[1] == '.')) {
		c->bad = true;
		return NULL;
	}
	memcpy(dst, p, n);
	dst[n] = '\0';
	*np = dst + n + 1;
	return dst;
}

/* A symlink's target: any bytes but NUL, at least one. */
static const char *take_target(struct cur *c, char **np)
{
	size_t n = (size_t)take_le(c, 2);
	const unsigned char *p = take(c, n);
	char *dst = *np;

	if (!p || !n || memchr(p, '\0', n)) {
		c->bad = true;
		return NULL;
	}
	memcpy(dst, p, n);
	dst[n] = '\0';
	*np = dst + n + 1;
	return dst;
}

static bool take_stat(struct cur *c, struct stat *st)
{
	const unsigned char *p = take(c, STAT_BYTES);

	if (!p)
		return false;
	get_stat(p, st);
	return true;
}

int meta_decode(const void *buf, size_t len, struct meta_snap **out)
{
	const unsigned char *b = buf;
	struct meta_snap *s;
	struct cur c;
	uint32_t ndirs, nents, i, j, k = 0;
	uint64_t payload;
	char *np;

	*out = NULL;
	if (len < HDR_BYTES + STAT_BYTES + 8 || memcmp(b, META_MAGIC, 8) ||
	    get_le(b + 8, 4) != META_VERSION)
		return -EINVAL;
	payload = get_le(b + 24, 8);
	if (payload != len - HDR_BYTES - 8 ||
	    XXH3_64bits(b, len - 8) != get_le(b + len - 8, 8))
		return -EINVAL;
	ndirs = (uint32_t)get_le(b + 12, 4);
	nents = (uint32_t)get_le(b + 16, 4);
	/* every record takes bytes: bounds the allocations by len */
	if (ndirs > len / (4 + 2 + STAT_BYTES + 4) ||
	    nents > len / (2 + 1 + STAT_BYTES))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ndirs = ndirs;
	s->nents = nents;
	s->dirs = calloc(ndirs ? ndirs : 1, sizeof(*s->dirs));
	s->ents = calloc(nents ? nents : 1, sizeof(*s->ents));
	s->names = malloc(len);		/* names + NULs fit in the file */
	if (!s->dirs || !s->ents || !s->names) {
		meta_snap_free(s);
		return -ENOMEM;
	}
	s->bytes = sizeof(*s) + ndirs * sizeof(*s->dirs) +
		   nents * sizeof(*s->ents) + len;
	np = s->names;
	c.p = b + HDR_BYTES;
	c.end = b + len - 8;
	c.bad = false;
	take_stat(&c, &s->root);
	for (i = 0; i < ndirs && !c.bad; i++) {
		struct meta_dir *d = &s->dirs[i];
		const struct meta_ent *pe;
		uint32_t n;

		d->parent = (uint32_t)take_le(&c, 4);
		d->name = take_name(&c, &np, d->parent == META_NONE);
		take_stat(&c, &d->st);
		n = (uint32_t)take_le(&c, 4);
		if (c.bad || n > nents - k)
			goto bad;
		d->n = n;
		d->ents = &s->ents[k];
		for (j = 0; j < n && !c.bad; j++, k++) {
			s->ents[k].name = take_name(&c, &np, false);
			take_stat(&c, &s->ents[k].st);
			s->ents[k].sub = META_NONE;
			if (!c.bad && S_ISLNK(s->ents[k].st.st_mode))
				s->ents[k].target = take_target(&c, &np);
		}
		if (c.bad)
			goto bad;
		qsort(d->ents, n, sizeof(*d->ents), cmp_ent);
		for (j = 1; j < n; j++)
			if (!strcmp(d->ents[j - 1].name, d->ents[j].name))
				goto bad;
		if (!S_ISDIR(d->st.st_mode))
			goto bad;
		if (d->parent == META_NONE) {
			/* only the first record may be the root's */
			if (i != 0 || d->st.st_dev != s->root.st_dev ||
			    d->st.st_ino != s->root.st_ino)
				goto bad;
			continue;
		}
		if (d->parent >= i)
			goto bad;
		pe = meta_find(&s->dirs[d->parent], d->name);
		if (!pe || !S_ISDIR(pe->st.st_mode) ||
		    pe->st.st_dev != d->st.st_dev ||
		    pe->st.st_ino != d->st.st_ino || pe->sub != META_NONE)
			goto bad;
		((struct meta_ent *)pe)->sub = i;
	}
	if (c.bad || c.p != c.end || k != nents)
		goto bad;
	*out = s;
	return 0;
bad:
	meta_snap_free(s);
	return -EINVAL;
}

/* ------------------------------------------------------------------ */
/* Files */

int meta_read_file(int dirfd, const char *name, size_t max, void **bufp,
		   size_t *lenp)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, err;

	/* O_NONBLOCK: a FIFO put in its place must not hang the mount (a
	 * regular file's reads ignore the flag) */
	fd = openat(dirfd, name,
		    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd == -1)
		return -errno;
	if (fstat(fd, &st) == -1) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	/* the cachedir's files are the daemon's alone, even old ones */
	err = file_make_private(fd, 0600);
	if (err) {
		close(fd);
		return err;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;		/* shorter than it was: decode fails */
		got += (size_t)n;
	}
	close(fd);
	*bufp = buf;
	*lenp = got;
	return 0;
}
