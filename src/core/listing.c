// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Directory listings' lifetime and memory (declared in hotfs/inode.h
 * beside struct hotfs_listing): references, the generation that tags
 * their offsets, installing one as a directory's, and the bound on the
 * bytes all of them use.  What is listed and when a listing is served is
 * src/core/dirlist.c's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "hotfs/dirlist.h"
#include "hotfs/inode.h"

static _Atomic size_t all_listing_bytes;
static _Atomic uint32_t listing_gen;

uint32_t listing_next_gen_peek(void)
{
	return atomic_load(&listing_gen);
}

uint32_t listing_next_gen(void)
{
	/* 31 bits: offsets stay positive loff_t values */
	return atomic_fetch_add(&listing_gen, 1) % 0x7fffffffu + 1;
}

size_t listing_bytes(void)
{
	return atomic_load(&all_listing_bytes);
}

void listing_put(struct hotfs_listing *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	atomic_fetch_sub(&all_listing_bytes, l->bytes);
	free(l->ents);
	free(l->names);
	free(l);
}

bool listing_try_install(struct hotfs_inode *in, struct hotfs_listing *l,
			 bool keep)
{
	struct hotfs_listing *old;

	atomic_store(&l->refs, 1);
	if (listing_bytes() + l->bytes > LISTING_MAX_BYTES)
		return false;
	atomic_fetch_add(&all_listing_bytes, l->bytes);
	/* the caller's reference is taken before another thread can see
	 * l: a newer listing installed at once by another reader puts the
	 * directory's, and would free l under the caller */
	if (keep)
		atomic_store(&l->refs, 2);
	pthread_mutex_lock(&in->m);
	old = in->dir.listing;
	in->dir.listing = l;
	pthread_mutex_unlock(&in->m);
	listing_put(old);
	return true;
}

bool listing_install(struct hotfs_inode *in, struct hotfs_listing *l)
{
	if (listing_try_install(in, l, false))
		return true;
	l->bytes = 0;
	listing_put(l);
	return false;
}
