// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode table (see include/hotfs/inode.h).
 *
 * A chained hash table keyed by (dev, ino) that doubles when its load
 * passes 1.  The root inode is never freed.  The kernel's node id for an
 * inode is its address (passthrough_ll.c does the same), so an inode must
 * stay allocated until the kernel forgets every lookup of it.
 *
 * Lock order: table lock -> inode lock (hotfs_inode.m).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/inode.h"

struct hotfs_itable {
	pthread_mutex_t lock;		/* protects everything below */
	struct hotfs_inode **buckets;
	size_t nbuckets;		/* power of two */
	size_t count;
	struct hotfs_inode root;
};

static size_t hash_key(dev_t dev, ino_t ino, size_t nbuckets)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull;

	h ^= (uint64_t)dev * 0xC2B2AE3D27D4EB4Full;
	h ^= h >> 29;
	return (size_t)h & (nbuckets - 1);
}

int ino_table_new(struct hotfs_itable **tp, int root_fd)
{
	struct hotfs_itable *t;
	struct stat st;

	if (fstat(root_fd, &st) == -1)
		return -errno;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->root.fd = root_fd;
	t->root.dev = st.st_dev;
	t->root.ino = st.st_ino;
	t->root.type = S_IFDIR;
	t->root.nlookup = 2;
	pthread_mutex_init(&t->root.m, NULL);
	t->buckets[hash_key(st.st_dev, st.st_ino, t->nbuckets)] = &t->root;
	t->count = 1;
	*tp = t;
	return 0;
}

static void free_inode(struct hotfs_inode *in)
{
	close(in->fd);
	pthread_mutex_destroy(&in->m);
	free(in);
}

void ino_table_free(struct hotfs_itable *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		struct hotfs_inode *in = t->buckets[i], *next;

		for (; in; in = next) {
			next = in->next;
			if (in != &t->root)
				free_inode(in);
		}
	}
	close(t->root.fd);
	pthread_mutex_destroy(&t->root.m);
	pthread_mutex_destroy(&t->lock);
	free(t->buckets);
	free(t);
}

struct hotfs_inode *ino_root(struct hotfs_itable *t)
{
	return &t->root;
}

/* Called with the table lock held. */
static void __grow(struct hotfs_itable *t)
{
	size_t n = t->nbuckets * 2, i;
	struct hotfs_inode **b = calloc(n, sizeof(*b));

	if (!b)
		return;		/* longer chains, still correct */
	for (i = 0; i < t->nbuckets; i++) {
		struct hotfs_inode *in = t->buckets[i], *next;

		for (; in; in = next) {
			size_t h = hash_key(in->dev, in->ino, n);

			next = in->next;
			in->next = b[h];
			b[h] = in;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

struct hotfs_inode *ino_get(struct hotfs_itable *t, int fd,
			    const struct stat *st, int *err)
{
	struct hotfs_inode *in, *nin;
	size_t h;

	/* Allocate outside the lock; usually the inode is new. */
	nin = calloc(1, sizeof(*nin));
	pthread_mutex_lock(&t->lock);
	h = hash_key(st->st_dev, st->st_ino, t->nbuckets);
	for (in = t->buckets[h]; in; in = in->next)
		if (in->ino == st->st_ino && in->dev == st->st_dev)
			break;
	if (in) {
		in->nlookup++;
		pthread_mutex_unlock(&t->lock);
		close(fd);
		free(nin);
		return in;
	}
	if (!nin) {
		pthread_mutex_unlock(&t->lock);
		close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	nin->fd = fd;
	nin->dev = st->st_dev;
	nin->ino = st->st_ino;
	nin->type = st->st_mode & S_IFMT;
	nin->nlookup = 1;
	nin->cached_extents_hint = UINT64_MAX;	/* unknown: assume all */
	pthread_mutex_init(&nin->m, NULL);
	nin->next = t->buckets[h];
	t->buckets[h] = nin;
	if (++t->count > t->nbuckets)
		__grow(t);
	pthread_mutex_unlock(&t->lock);
	return nin;
}

/* Called with the table lock held; returns true if in must be freed. */
static bool __unlink_if_unused(struct hotfs_itable *t, struct hotfs_inode *in)
{
	struct hotfs_inode **pp;

	if (in->nlookup || in->holds || in == &t->root)
		return false;
	pp = &t->buckets[hash_key(in->dev, in->ino, t->nbuckets)];
	for (; *pp; pp = &(*pp)->next)
		if (*pp == in) {
			*pp = in->next;
			break;
		}
	t->count--;
	return true;
}

void ino_forget(struct hotfs_itable *t, struct hotfs_inode *in, uint64_t n)
{
	bool dead;

	pthread_mutex_lock(&t->lock);
	if (n > in->nlookup)
		n = in->nlookup;	/* never underflow on a confused kernel */
	in->nlookup -= n;
	dead = __unlink_if_unused(t, in);
	pthread_mutex_unlock(&t->lock);
	if (dead)
		free_inode(in);
}

void ino_hold(struct hotfs_itable *t, struct hotfs_inode *in)
{
	pthread_mutex_lock(&t->lock);
	in->holds++;
	pthread_mutex_unlock(&t->lock);
}

void ino_unhold(struct hotfs_itable *t, struct hotfs_inode *in)
{
	bool dead;

	pthread_mutex_lock(&t->lock);
	in->holds--;
	dead = __unlink_if_unused(t, in);
	pthread_mutex_unlock(&t->lock);
	if (dead)
		free_inode(in);
}

size_t ino_count(struct hotfs_itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
