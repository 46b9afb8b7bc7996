// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Notifications to the kernel from a thread of their own, with a
 * descriptor table of its own (see include/hotfs/notify.h).
 *
 * The queue is a list of notes, malloc'd by the callers; n->m protects
 * it and is never held across a send nor a callback.  The thread marks
 * the node id it sends for (n->sending) so that ntf_forget can wait for
 * it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hotfs/notify.h"

/* linux/fuse.h's; that header clashes with libfuse's */
#ifndef FUSE_DEV_IOC_CLONE
#define FUSE_DEV_IOC_CLONE	_IOR(229, 0, uint32_t)
#endif

/* ntf_wait_room waits while this many notes are queued */
#define NTF_ROOM	1024

struct note {
	struct note *next;
	uint64_t node;			/* the parent, for an entry */
	int64_t off;			/* an inode's: < 0 attributes only */
	void (*sent)(void *arg);
	void *arg;
	bool entry;
	char name[];			/* an entry's */
};

struct hotfs_notify {
	struct fuse_session *se;
	pthread_t thread;

	pthread_mutex_t m;		/* protects the rest */
	pthread_cond_t more;		/* a note queued, or stop */
	pthread_cond_t less;		/* a note sent: room, or not sending */
	struct note *head, **tail;
	unsigned count;
	uint64_t sending;		/* the node being sent for, 0: none */
	bool stop;
	int state;			/* the thread's table: 0 not yet,
					 * 1 its own, -1 the daemon's */

	_Atomic uint64_t nsent;
};

static void add(struct hotfs_notify *n, struct note *nt)
{
	nt->next = NULL;
	pthread_mutex_lock(&n->m);
	*n->tail = nt;
	n->tail = &nt->next;
	n->count++;
	pthread_cond_signal(&n->more);
	pthread_mutex_unlock(&n->m);
}

void ntf_expire(struct hotfs_notify *n, uint64_t parent, const char *name)
{
	size_t len = strlen(name);
	struct note *nt;

	if (!n)
		return;
	nt = malloc(sizeof(*nt) + len + 1);
	if (!nt)	/* the entry keeps its timeout (hotfs/watch.h) */
		return;
	memset(nt, 0, sizeof(*nt));
	nt->node = parent;
	nt->entry = true;
	memcpy(nt->name, name, len + 1);
	add(n, nt);
}

void ntf_inval(struct hotfs_notify *n, uint64_t node, int64_t off,
	       void (*sent)(void *arg), void *arg)
{
	struct note *nt = n ? calloc(1, sizeof(*nt)) : NULL;

	if (!nt) {
		if (sent)
			sent(arg);
		return;
	}
	nt->node = node;
	nt->off = off;
	nt->sent = sent;
	nt->arg = arg;
	add(n, nt);
}

void ntf_wait_room(struct hotfs_notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->m);
	while (n->count >= NTF_ROOM && !n->stop)
		pthread_cond_wait(&n->less, &n->m);
	pthread_mutex_unlock(&n->m);
}

void ntf_forget(struct hotfs_notify *n, uint64_t node)
{
	struct note **pp, *nt, *gone = NULL;

	if (!n)
		return;
	pthread_mutex_lock(&n->m);
	while (n->sending == node)
		pthread_cond_wait(&n->less, &n->m);
	for (pp = &n->head; (nt = *pp);) {
		if (nt->node != node) {
			pp = &nt->next;
			continue;
		}
		*pp = nt->next;
		n->count--;
		nt->next = gone;
		gone = nt;
	}
	n->tail = pp;		/* the last next, whatever went */
	pthread_mutex_unlock(&n->m);
	while ((nt = gone)) {
		gone = nt->next;
		free(nt);
	}
}

uint64_t ntf_sent(struct hotfs_notify *n)
{
	return n ? atomic_load_explicit(&n->nsent, memory_order_relaxed) : 0;
}

bool ntf_own_files(struct hotfs_notify *n)
{
	bool own;

	if (!n)
		return false;
	pthread_mutex_lock(&n->m);
	own = n->state > 0;
	pthread_mutex_unlock(&n->m);
	return own;
}

static void send_note(struct hotfs_notify *n, const struct note *nt)
{
	int r;

	if (nt->entry) {
		r = fuse_lowlevel_notify_expire_entry(n->se, nt->node,
						      nt->name,
						      strlen(nt->name)
#if FUSE_VERSION < FUSE_MAKE_VERSION(3, 16)
						      , FUSE_LL_EXPIRE_ONLY /* 3.16: implied */
#endif
						      );
		if (r == -ENOSYS)	/* a kernel without it: the older way */
			fuse_lowlevel_notify_inval_entry(n->se, nt->node,
							 nt->name,
							 strlen(nt->name));
	} else {
		/* offset 0, length 0: all of it */
		fuse_lowlevel_notify_inval_inode(n->se, nt->node, nt->off, 0);
	}
	atomic_fetch_add_explicit(&n->nsent, 1, memory_order_relaxed);
}

/*
 * In the thread: a descriptor table of its own holding the clone (cfd,
 * open in the daemon's table, which the starter closes) at the session's
 * descriptor's number, and stderr.  True if done; false leaves the
 * daemon's table shared (nothing changed).
 */
static bool own_table(struct hotfs_notify *n, int cfd)
{
	int sfd = fuse_session_fd(n->se);

	if (cfd < 0 || sfd <= STDERR_FILENO)
		return false;
	if (unshare(CLONE_FILES) == -1)
		return false;
	/* from here on the table is this thread's alone */
	if (dup2(cfd, sfd) == -1) {
		/* the daemon's device is still at sfd: as if shared */
		close_range(STDERR_FILENO + 1, sfd - 1, 0);
		close_range(sfd + 1, ~0U, 0);
		return false;
	}
	close_range(0, STDIN_FILENO + 1, 0);	/* 0 and 1; stderr stays */
	close_range(STDERR_FILENO + 1, sfd - 1, 0);
	close_range(sfd + 1, ~0U, 0);
	return true;
}

struct start {
	struct hotfs_notify *n;
	int cfd;
};

static void *ntf_thread(void *arg)
{
	struct start *s = arg;
	struct hotfs_notify *n = s->n;
	bool own = own_table(n, s->cfd);
	struct note *nt;

	pthread_mutex_lock(&n->m);
	n->state = own ? 1 : -1;	/* s is the starter's again */
	pthread_cond_broadcast(&n->less);
	for (;;) {
		while (!n->head && !n->stop)
			pthread_cond_wait(&n->more, &n->m);
		if (n->stop)
			break;
		nt = n->head;
		n->head = nt->next;
		if (!n->head)
			n->tail = &n->head;
		n->count--;
		n->sending = nt->node;
		pthread_mutex_unlock(&n->m);
		send_note(n, nt);
		if (nt->sent)	/* before sending ends: the node is alive */
			nt->sent(nt->arg);
		free(nt);
		pthread_mutex_lock(&n->m);
		n->sending = 0;
		pthread_cond_broadcast(&n->less);
	}
	pthread_mutex_unlock(&n->m);
	return NULL;
}

/* A clone of the session's device, in the daemon's table; -1 if none. */
static int clone_dev(struct fuse_session *se)
{
	uint32_t sfd = (uint32_t)fuse_session_fd(se);
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd == -1)
		return -1;
	if (ioctl(fd, FUSE_DEV_IOC_CLONE, &sfd) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int ntf_start(struct hotfs_notify **np, struct fuse_session *se)
{
	struct hotfs_notify *n = calloc(1, sizeof(*n));
	struct start s;
	int r;

	if (!n)
		return -ENOMEM;
	n->se = se;
	n->tail = &n->head;
	pthread_mutex_init(&n->m, NULL);
	pthread_cond_init(&n->more, NULL);
	pthread_cond_init(&n->less, NULL);
	s.n = n;
	s.cfd = clone_dev(se);
	r = pthread_create(&n->thread, NULL, ntf_thread, &s);
	if (r) {
		if (s.cfd >= 0)
			close(s.cfd);
		pthread_cond_destroy(&n->less);
		pthread_cond_destroy(&n->more);
		pthread_mutex_destroy(&n->m);
		free(n);
		return -r;
	}
	pthread_setname_np(n->thread, "hotfs-notify");
	/* the thread has its own copy of the clone, or none: the daemon's
	 * goes (s is on this stack until then) */
	pthread_mutex_lock(&n->m);
	while (!n->state)
		pthread_cond_wait(&n->less, &n->m);
	pthread_mutex_unlock(&n->m);
	if (s.cfd >= 0)
		close(s.cfd);
	*np = n;
	return 0;
}

void ntf_stop(struct hotfs_notify *n)
{
	struct note *nt;

	if (!n)
		return;
	pthread_mutex_lock(&n->m);
	n->stop = true;
	pthread_cond_broadcast(&n->more);
	pthread_cond_broadcast(&n->less);
	pthread_mutex_unlock(&n->m);
	pthread_join(n->thread, NULL);
	while ((nt = n->head)) {
		n->head = nt->next;
		if (nt->sent)
			nt->sent(nt->arg);
		free(nt);
	}
	pthread_cond_destroy(&n->less);
	pthread_cond_destroy(&n->more);
	pthread_mutex_destroy(&n->m);
	free(n);
}
