// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-thread io_uring rings (see include/hotfs/uring.h).  No locks: each
 * ring belongs to one thread.  If io_uring cannot be set up (an old
 * kernel, a seccomp filter, kernel.io_uring_disabled), ur_probe says so
 * at start and the read path uses pread; a ring that fails later is
 * replaced (ur_discard), or ur_ring returns NULL and that read uses pread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hotfs/log.h"
#include "hotfs/uring.h"

#ifdef HAVE_URING
#include <liburing.h>

struct ur_thread {
	struct io_uring ring;
	bool ok;
	bool fixed;
};

static pthread_key_t ur_key;
static pthread_once_t ur_once = PTHREAD_ONCE_INIT;

static void ur_destroy(void *p)
{
	struct ur_thread *t = p;

	if (t->ok)
		io_uring_queue_exit(&t->ring);
	free(t);
}

static void ur_init_key(void)
{
	pthread_key_create(&ur_key, ur_destroy);
}

struct io_uring *ur_ring(int data_fd, bool *fixed)
{
	struct ur_thread *t;
	int r;

	pthread_once(&ur_once, ur_init_key);
	t = pthread_getspecific(ur_key);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		r = io_uring_queue_init(UR_DEPTH, &t->ring, 0);
		if (r < 0) {
			hotfs_log(LOG_WARNING,
				  "io_uring unavailable (%d), using pread\n",
				  r);
		} else {
			t->ok = true;
		}
		pthread_setspecific(ur_key, t);
	}
	if (t->ok && !t->fixed && data_fd >= 0 &&
	    io_uring_register_files(&t->ring, &data_fd, 1) == 0)
		t->fixed = true;
	*fixed = t->fixed;
	return t->ok ? &t->ring : NULL;
}

bool ur_probe(char *why, size_t whylen)
{
	struct io_uring ring;
	int r = io_uring_queue_init(2, &ring, 0);

	if (r < 0) {
		snprintf(why, whylen, "io_uring refused: %s", strerror(-r));
		return false;
	}
	io_uring_queue_exit(&ring);
	return true;
}

void ur_discard(void)
{
	struct ur_thread *t;

	pthread_once(&ur_once, ur_init_key);
	t = pthread_getspecific(ur_key);
	if (!t)
		return;
	pthread_setspecific(ur_key, NULL);
	ur_destroy(t);
}

#else	/* built without io_uring (-Dio_uring=disabled) */

bool ur_probe(char *why, size_t whylen)
{
	snprintf(why, whylen, "built without io_uring");
	return false;
}

struct io_uring *ur_ring(int data_fd, bool *fixed)
{
	(void)data_fd;
	*fixed = false;
	return NULL;
}

void ur_discard(void)
{
}

#endif
