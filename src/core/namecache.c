// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Names found through the source, per directory (see
 * include/hotfs/namecache.h).  A directory's table is a hash of its
 * names; all its entries are of one change generation, and a table found
 * under an older one is emptied before it is used again.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hotfs/namecache.h"

struct nc_ent {
	struct nc_ent *next;
	int64_t at_ns;			/* when the source answered */
	size_t bytes;
	struct stat st;
	char name[];
};

struct hotfs_names {
	uint64_t gen;			/* of every entry */
	struct nc_ent **b;
	size_t nb, n;
};

static _Atomic uint64_t change_gen = 1;
static _Atomic size_t all_bytes;

uint64_t nc_gen(void)
{
	return atomic_load(&change_gen);
}

void nc_changed(void)
{
	atomic_fetch_add(&change_gen, 1);
}

size_t nc_bytes(void)
{
	return atomic_load(&all_bytes);
}

static size_t hash(const char *name)
{
	size_t h = 5381;

	while (*name)
		h = h * 33 + (unsigned char)*name++;
	return h;
}

static void free_ent(struct nc_ent *e)
{
	atomic_fetch_sub(&all_bytes, e->bytes);
	free(e);
}

/* Empty t (its buckets kept). */
static void clear(struct hotfs_names *t)
{
	size_t i;

	for (i = 0; i < t->nb; i++)
		while (t->b[i]) {
			struct nc_ent *e = t->b[i];

			t->b[i] = e->next;
			free_ent(e);
		}
	t->n = 0;
}

void nc_free(struct hotfs_names *t)
{
	if (!t)
		return;
	clear(t);
	atomic_fetch_sub(&all_bytes, t->nb * sizeof(*t->b));
	free(t->b);
	free(t);
}

static struct nc_ent **find(struct hotfs_names *t, const char *name)
{
	struct nc_ent **p;

	if (!t || !t->nb)
		return NULL;
	for (p = &t->b[hash(name) % t->nb]; *p; p = &(*p)->next)
		if (strcmp((*p)->name, name) == 0)
			return p;
	return NULL;
}

/* Twice the buckets once there are as many entries; false: no memory
 * (the table stays as it was). */
static bool grow(struct hotfs_names *t)
{
	size_t nb = t->nb ? t->nb * 2 : 16, i;
	struct nc_ent **b = calloc(nb, sizeof(*b));

	if (!b)
		return false;
	for (i = 0; i < t->nb; i++)
		while (t->b[i]) {
			struct nc_ent *e = t->b[i];
			size_t h = hash(e->name) % nb;

			t->b[i] = e->next;
			e->next = b[h];
			b[h] = e;
		}
	atomic_fetch_add(&all_bytes, (nb - t->nb) * sizeof(*b));
	free(t->b);
	t->b = b;
	t->nb = nb;
	return true;
}

void nc_add(struct hotfs_inode *dir, const char *name, const struct stat *st,
	    uint64_t gen, int64_t now_ns)
{
	size_t len = strlen(name) + 1, bytes = sizeof(struct nc_ent) + len;
	struct nc_ent *e, **old;
	struct hotfs_names *t;

	if (gen != nc_gen() || nc_bytes() + bytes > NC_MAX_BYTES)
		return;
	e = malloc(bytes);
	if (!e)
		return;
	e->at_ns = now_ns;
	e->bytes = bytes;
	e->st = *st;
	memcpy(e->name, name, len);
	atomic_fetch_add(&all_bytes, bytes);
	pthread_mutex_lock(&dir->m);
	t = dir->dir.names;
	if (!t)
		t = dir->dir.names = calloc(1, sizeof(*t));
	if (t && t->gen != gen) {
		clear(t);
		t->gen = gen;
	}
	if (t && t->n >= t->nb && !grow(t) && !t->nb)
		t = NULL;
	if (t) {
		old = find(t, name);
		if (old) {
			struct nc_ent *o = *old;

			e->next = o->next;
			*old = e;
			free_ent(o);
		} else {
			size_t h = hash(name) % t->nb;

			e->next = t->b[h];
			t->b[h] = e;
			t->n++;
		}
		e = NULL;
	}
	pthread_mutex_unlock(&dir->m);
	if (e)
		free_ent(e);
}

bool nc_get(struct hotfs_inode *dir, const char *name, uint64_t gen,
	    int64_t now_ns, int64_t max_ns, struct stat *st)
{
	struct nc_ent **p;
	bool hit = false;

	pthread_mutex_lock(&dir->m);
	if (dir->dir.names && dir->dir.names->gen == gen) {
		p = find(dir->dir.names, name);
		hit = p && now_ns - (*p)->at_ns < max_ns;
		if (hit)
			*st = (*p)->st;
	}
	pthread_mutex_unlock(&dir->m);
	return hit;
}

void nc_forget(struct hotfs_inode *dir, const char *name)
{
	struct nc_ent **p, *e = NULL;

	pthread_mutex_lock(&dir->m);
	p = find(dir->dir.names, name);
	if (p) {
		e = *p;
		*p = e->next;
		dir->dir.names->n--;
	}
	pthread_mutex_unlock(&dir->m);
	if (e)
		free_ent(e);
}

size_t nc_count(struct hotfs_inode *dir)
{
	size_t n;

	pthread_mutex_lock(&dir->m);
	n = dir->dir.names ? dir->dir.names->n : 0;
	pthread_mutex_unlock(&dir->m);
	return n;
}
