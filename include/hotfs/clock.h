/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's clocks, in nanoseconds: one home for what each module
 * used to write for itself.  CLOCK_MONOTONIC for intervals and deadlines
 * within a run; CLOCK_REALTIME where a time is compared with the source's
 * timestamps (which the source's clock wrote).
 */
#ifndef HOTFS_CLOCK_H
#define HOTFS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static inline int64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return clock_ts_ns(&ts);
}

static inline int64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return clock_ts_ns(&ts);
}

/* ts plus ms milliseconds (a deadline for pthread_cond_timedwait). */
static inline void clock_add_ms(struct timespec *ts, long ms)
{
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

#endif
