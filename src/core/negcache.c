// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Names a lookup found absent, kept per directory (see
 * include/hotfs/negcache.h).
 */
#include <stdlib.h>
#include <string.h>

#include "hotfs/negcache.h"
#include "hotfs/stamp.h"

bool neg_hit(struct hotfs_inode *dir, const struct stat *st,
	     const char *name)
{
	struct hotfs_neg *n;
	bool hit = false;
	unsigned i;

	pthread_mutex_lock(&dir->m);
	n = dir->dir.neg;
	if (n && times_same(n->mtime_ns, n->ctime_ns, st))
		for (i = 0; i < n->n && !hit; i++)
			hit = strcmp(n->names[i], name) == 0;
	pthread_mutex_unlock(&dir->m);
	return hit;
}

void neg_add(struct hotfs_inode *dir, const struct stat *st,
	     const char *name)
{
	struct hotfs_neg *n, *stale = NULL;
	char *copy = strdup(name);

	if (!copy)
		return;
	pthread_mutex_lock(&dir->m);
	n = dir->dir.neg;
	if (n && !times_same(n->mtime_ns, n->ctime_ns, st)) {
		stale = n;		/* the directory changed: start over */
		n = dir->dir.neg = NULL;
	}
	if (!n)
		n = dir->dir.neg = calloc(1, sizeof(*n));
	if (n) {
		n->mtime_ns = ts_ns(&st->st_mtim);
		n->ctime_ns = ts_ns(&st->st_ctim);
		if (n->n < HOTFS_NEG_MAX) {
			n->names[n->n++] = copy;
		} else {		/* replace round-robin */
			free(n->names[n->next]);
			n->names[n->next] = copy;
			n->next = (n->next + 1) % HOTFS_NEG_MAX;
		}
		copy = NULL;
	}
	pthread_mutex_unlock(&dir->m);
	free(copy);
	neg_free(stale);
}

void neg_free(struct hotfs_neg *neg)
{
	unsigned i;

	if (!neg)
		return;
	for (i = 0; i < neg->n; i++)
		free(neg->names[i]);
	free(neg);
}
