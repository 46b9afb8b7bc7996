// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The set of pinned files (see include/hotfs/pins.h).
 *
 * In memory: an open-addressing hash set of keys, doubled at load 1/2.
 * On disk: "pins" in the cachedir, one "dev ino" pair per line after a
 * "hotfs-pins 1" header; a damaged file is ignored with a warning (pins
 * are a hint for eviction, never a source of data).
 *
 * Lock: p->lock protects everything; it is a leaf (the store's eviction
 * callback takes it with store locks held).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/fileio.h"
#include "hotfs/log.h"
#include "hotfs/pins.h"
#include "hotfs/store.h"

struct hotfs_pins {
	pthread_mutex_t lock;
	int dirfd;
	struct hotfs_key *slot;	/* ino == 0 && dev == 0: empty */
	size_t nslot, count;
};

static size_t hkey(const struct hotfs_key *k, size_t n)
{
	uint64_t h = k->ino * 0x9E3779B97F4A7C15ull ^ (k->dev + 1) *
		     0xC2B2AE3D27D4EB4Full;

	return (size_t)(h ^ (h >> 31)) & (n - 1);
}

static bool empty(const struct hotfs_key *k)
{
	return !k->ino && !k->dev;
}

static struct hotfs_key *find(struct hotfs_pins *p, const struct hotfs_key *k)
{
	size_t i = hkey(k, p->nslot);

	for (;; i = (i + 1) & (p->nslot - 1)) {
		struct hotfs_key *s = &p->slot[i];

		if (empty(s) || (s->ino == k->ino && s->dev == k->dev))
			return s;
	}
}

static int grow(struct hotfs_pins *p)
{
	struct hotfs_key *old = p->slot;
	size_t n = p->nslot, i;

	p->slot = calloc(n * 2, sizeof(*p->slot));
	if (!p->slot) {
		p->slot = old;
		return -ENOMEM;
	}
	p->nslot = n * 2;
	for (i = 0; i < n; i++)
		if (!empty(&old[i]))
			*find(p, &old[i]) = old[i];
	free(old);
	return 0;
}

static int __add(struct hotfs_pins *p, const struct hotfs_key *k)
{
	struct hotfs_key *s;

	if (empty(k))
		return -EINVAL;
	if ((p->count + 1) * 2 > p->nslot && grow(p) < 0)
		return -ENOMEM;
	s = find(p, k);
	if (empty(s)) {
		*s = *k;
		p->count++;
	}
	return 0;
}

static void __del(struct hotfs_pins *p, const struct hotfs_key *k)
{
	struct hotfs_key *s = find(p, k), *old;
	size_t n, i;

	if (empty(s))
		return;
	/* rehash the rest: simple and pins change rarely */
	memset(s, 0, sizeof(*s));
	p->count--;
	old = p->slot;
	n = p->nslot;
	p->slot = calloc(n, sizeof(*p->slot));
	if (!p->slot) {
		p->slot = old;	/* a hole in a probe chain: rebuild later */
		return;
	}
	for (i = 0; i < n; i++)
		if (!empty(&old[i]))
			*find(p, &old[i]) = old[i];
	free(old);
}

static int save(struct hotfs_pins *p)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;
	int r;

	f = open_memstream(&buf, &len);
	if (!f)
		return -errno;
	fprintf(f, "hotfs-pins 1\n");
	for (i = 0; i < p->nslot; i++)
		if (!empty(&p->slot[i]))
			fprintf(f, "%" PRIu64 " %" PRIu64 "\n",
				p->slot[i].dev, p->slot[i].ino);
	r = fclose(f) == 0 ? file_replace_at(p->dirfd, "pins", buf, len) :
	    -ENOMEM;
	free(buf);
	return r;
}

static void load(struct hotfs_pins *p)
{
	char line[128];
	FILE *f;
	int fd, r;

	fd = openat(p->dirfd, "pins", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno != ENOENT)
			hotfs_log(LOG_WARNING, "pins: %s, ignored\n",
				  errno == ELOOP ? file_private_why(-ELOOP) :
				  strerror(errno));
		return;
	}
	/* the cachedir's files are the daemon's alone, even old ones */
	r = file_make_private(fd, 0600);
	if (r) {
		hotfs_log(LOG_WARNING, "pins: cannot make the file 0600 (%s), "
			  "ignored\n", file_private_why(r));
		close(fd);
		return;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	if (!fgets(line, sizeof(line), f) ||
	    strcmp(line, "hotfs-pins 1\n") != 0) {
		hotfs_log(LOG_WARNING, "pins: unknown format, ignored\n");
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		struct hotfs_key k;
		char *end;

		errno = 0;
		k.dev = strtoull(line, &end, 10);
		if (errno || *end != ' ')
			break;
		k.ino = strtoull(end + 1, &end, 10);
		if (errno || *end != '\n' || __add(p, &k) < 0)
			break;
	}
	fclose(f);
}

int pins_open(struct hotfs_pins **out, int dirfd, bool reset)
{
	struct hotfs_pins *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->nslot = 64;
	p->slot = calloc(p->nslot, sizeof(*p->slot));
	p->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (!p->slot || p->dirfd < 0) {
		int r = p->dirfd < 0 ? -errno : -ENOMEM;

		if (p->dirfd >= 0)
			close(p->dirfd);
		free(p->slot);
		free(p);
		return r;
	}
	pthread_mutex_init(&p->lock, NULL);
	if (reset)
		unlinkat(p->dirfd, "pins", 0);
	else
		load(p);
	*out = p;
	return 0;
}

void pins_close(struct hotfs_pins *p)
{
	if (!p)
		return;
	close(p->dirfd);
	pthread_mutex_destroy(&p->lock);
	free(p->slot);
	free(p);
}

bool pins_has(struct hotfs_pins *p, const struct hotfs_key *k)
{
	bool r;

	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	r = !empty(find(p, k));
	pthread_mutex_unlock(&p->lock);
	return r;
}

int pins_set(struct hotfs_pins *p, const struct hotfs_key *k, bool on)
{
	bool had;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	had = !empty(k) && !empty(find(p, k));
	if (on)
		r = __add(p, k);
	else
		__del(p, k);
	if (!r)
		r = save(p);
	/* not saved: as it was, so that what is in force is what a restart
	 * finds (a pin that failed is not kept, nor an unpin undone later) */
	if (r && had != on) {
		if (had)
			__add(p, k);
		else
			__del(p, k);
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

size_t pins_count(struct hotfs_pins *p)
{
	size_t n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	n = p->count;
	pthread_mutex_unlock(&p->lock);
	return n;
}
