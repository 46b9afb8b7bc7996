/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the inode table: the table itself, shared by inode.c (the
 * table, lookups and forgets, retention, the fd budget's clock) and
 * inode_fds.c (the file handles that let the budget close an inode's fd
 * and ino_fd reopen it).  inode_fds.c calls nothing of inode.c.
 *
 * Lock order: table lock -> inode lock (hotfs_inode.m).
 */
#ifndef HOTFS_INODE_I_H
#define HOTFS_INODE_I_H

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotfs/inode.h"

struct hotfs_itable {
	pthread_mutex_t lock;		/* protects everything below */
	struct hotfs_inode **buckets;
	size_t nbuckets;		/* power of two */
	size_t count;
	size_t retain_max;		/* 0 = free forgotten inodes at once */
	size_t retained;
	size_t fd_budget;		/* 0 = no bound on nfds */
	_Atomic size_t nfds;		/* inodes holding an fd, root too */
	size_t hand;			/* the budget's clock: a bucket */
	_Atomic bool shrinking;		/* one shrink() at a time; it owns
					 * the fields below */
	int handles;			/* 0: not probed, 1: work, -1: not */
	int mount_fd;			/* for open_by_handle_at, or -1 */
	int mnt_id;			/* the root's mount */
	bool warned_keep;		/* logged an inode without a handle */
	_Atomic uint64_t fd_drops, fd_reopens;
	struct hotfs_inode *lru_head, *lru_tail;	/* most recent first */
	struct hotfs_inode root;
	void (*on_free)(void *arg, struct hotfs_inode *in);
	void *on_free_arg;
	void (*nofh_free)(void *nofh);
	void (*on_stale)(void *arg, struct hotfs_inode *in);
	void *on_stale_arg;
	void (*on_change)(void *arg, struct hotfs_inode *in);
	void *on_change_arg;
	bool dying;			/* ino_table_free: parents go too */
};

/* inode_fds.c: the budget's file handles */
/*
 * Whether inodes can be reopened by handle here: the root's handle
 * opened on the root's mount.  Probed once, by the shrinker (one at a
 * time: t->shrinking).
 */
bool ino_handles_work(struct hotfs_itable *t);
/* Close in's fd for the budget if nothing is using it; in is held (the
 * shrinker's). */
void ino_drop_fd(struct hotfs_itable *t, struct hotfs_inode *in);
/* Reopen an inode whose fd the budget closed; the fd or -errno. */
int ino_reopen(struct hotfs_itable *t, struct hotfs_inode *in,
	       struct file_handle *fh);

#endif
