// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's periodic work (see include/hotfs/tick.h).  Lock: t->m
 * (a leaf) around the stop flag; none is held while working.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "hotfs/clock.h"
#include "hotfs/ctl.h"
#include "hotfs/filecopy.h"
#include "hotfs/fs.h"
#include "hotfs/tick.h"
#include "hotfs/wb.h"

struct hotfs_tick {
	struct hotfs *fs;
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t cv;		/* CLOCK_MONOTONIC */
	bool stop;			/* protected by m */
};

static void *tick_main(void *arg)
{
	struct hotfs_tick *t = arg;
	int64_t now, last_sweep, last_counts, last_copies;

	last_sweep = last_counts = last_copies = clock_mono_ns();
	pthread_mutex_lock(&t->m);
	while (!t->stop) {
		struct hotfs_cache *c;
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		clock_add_ms(&ts, TICK_MS);
		pthread_cond_timedwait(&t->cv, &t->m, &ts);
		if (t->stop)
			break;
		pthread_mutex_unlock(&t->m);
		c = fs_cache(t->fs);
		now = clock_mono_ns();
		vd_expire(t->fs);
		if (c)
			st_tick(c->st);
		/* once a second: a lap of the store takes far longer, and
		 * the store's statistics are read under its lock */
		if (c && c->fc && now - last_copies >= TICK_COPIES_MS * 1000000LL) {
			last_copies = now;
			fc_tick(c->fc);
		}
		wb_tick(t->fs->wb);
		if (c && now - last_sweep >= TICK_SWEEP_MS * 1000000LL) {
			last_sweep = now;
			ino_sweep(t->fs->it);
			/* the heap's free pages back to the system: the
			 * readers' copies promotions freed, by the hundred
			 * thousand while a random reader warms the store,
			 * stay in glibc's per-thread arenas otherwise */
			malloc_trim(0);
		}
		if (c && now - last_counts >=
		    CACHE_COUNTS_SAVE_S * 1000000000LL) {
			last_counts = now;
			cache_save_counts(c);
		}
		pthread_mutex_lock(&t->m);
	}
	pthread_mutex_unlock(&t->m);
	return NULL;
}

int tick_start(struct hotfs_tick **out, struct hotfs *fs)
{
	struct hotfs_tick *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;
	int r;

	if (!t)
		return -ENOMEM;
	t->fs = fs;
	pthread_mutex_init(&t->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&t->thread, NULL, tick_main, t);
	if (r) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->m);
		free(t);
		return -r;
	}
	*out = t;
	return 0;
}

void tick_stop(struct hotfs_tick *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->m);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->m);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->m);
	free(t);
}
