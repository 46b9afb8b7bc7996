// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The stamp the kernel's pages of a file go with (see
 * include/hotfs/stamp.h).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "hotfs/clock.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

int64_t stamp_racy_left(int64_t mtime_ns, int64_t ctime_ns, int64_t now)
{
	int64_t w = hotfs_src.gran_ns + PROBE_RACY_SLACK_NS, left;

	if (mtime_ns % 1000000000LL == 0 && ctime_ns % 1000000000LL == 0 &&
	    w < 2100000000LL)
		w = 2100000000LL;
	if (w < RACY_NS)
		w = RACY_NS;
	left = w - (now - mtime_ns);
	if (w - (now - ctime_ns) > left)
		left = w - (now - ctime_ns);
	return left < 0 ? 0 : left > w ? w : left;
}

bool stamp_racy_now(int64_t mtime_ns, int64_t ctime_ns)
{
	return srcprobe_coarse(&hotfs_src) &&
	       stamp_racy_left(mtime_ns, ctime_ns, clock_real_ns()) > 0;
}

bool stamp_same_locked(const struct hotfs_inode *in, const struct stat *st)
{
	return in->sp.stamp_valid &&
	       times_same(in->sp.stamp.mtime_ns, in->sp.stamp.ctime_ns, st) &&
	       in->sp.stamp.size == (uint64_t)st->st_size;
}

void stamp_take_locked(struct hotfs_inode *in, const struct stat *st)
{
	in->sp.stamp_valid = true;
	srcstamp_of(st, &in->sp.stamp);
}

void stamp_stat_locked(const struct hotfs_inode *in, struct stat *st)
{
	st->st_ino = in->ino;
	st->st_size = (off_t)in->sp.stamp.size;
	st->st_mtim.tv_sec = in->sp.stamp.mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = in->sp.stamp.mtime_ns % 1000000000;
	st->st_ctim.tv_sec = in->sp.stamp.ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = in->sp.stamp.ctime_ns % 1000000000;
}

static void record(struct hotfs_inode *in, const struct stat *st, bool ours)
{
	in->sp.stamp_valid = true;
	in->sp.stamp_ours = ours;
	in->sp.stamp_settled = !stamp_racy_now(ts_ns(&st->st_mtim),
					    ts_ns(&st->st_ctim));
	stamp_take_locked(in, st);
}

enum stamp_verdict stamp_check_locked(struct hotfs_inode *in,
				      const struct stat *st)
{
	bool valid = in->sp.stamp_valid;

	if (in->sp.chg_inflight || stamp_same_locked(in, st))
		return STAMP_SAME;
	record(in, st, false);
	if (valid)
		in->sp.behind++;
	return valid ? STAMP_CHANGED : STAMP_NEW;
}

enum stamp_verdict stamp_check(struct hotfs_inode *in, const struct stat *st)
{
	enum stamp_verdict v;

	pthread_mutex_lock(&in->m);
	v = stamp_check_locked(in, st);
	pthread_mutex_unlock(&in->m);
	return v;
}

enum stamp_verdict stamp_check_fd(struct hotfs_inode *in, int fd)
{
	enum stamp_verdict v = STAMP_SAME;
	struct stat st;

	pthread_mutex_lock(&in->m);
	if (!in->sp.chg_inflight && fstatat(fd, "", &st, AT_EMPTY_PATH) == 0)
		v = stamp_check_locked(in, &st);
	if (v == STAMP_CHANGED)
		in->sp.inval_pending++;
	pthread_mutex_unlock(&in->m);
	return v;
}

void stamp_inval_sent(struct hotfs_inode *in)
{
	pthread_mutex_lock(&in->m);
	if (in->sp.inval_pending && --in->sp.inval_pending == 0)
		pthread_cond_broadcast(&in->sp.inval_cv);
	pthread_mutex_unlock(&in->m);
}

void stamp_wait_inval_locked(struct hotfs_inode *in)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	while (in->sp.inval_pending &&
	       pthread_cond_timedwait(&in->sp.inval_cv, &in->m, &until) == 0)
		;
}

enum stamp_verdict stamp_check_ino(struct hotfs_inode *in, bool *seen)
{
	enum stamp_verdict v = STAMP_SAME;
	struct stat st;
	int fd;

	*seen = false;
	pthread_mutex_lock(&in->m);
	fd = atomic_load(&in->fd);
	if (!in->sp.chg_inflight && fd >= 0 &&
	    fstatat(fd, "", &st, AT_EMPTY_PATH) == 0) {
		v = stamp_check_locked(in, &st);
		*seen = v == STAMP_SAME && !in->sp.stamp_ours;
	}
	if (v == STAMP_CHANGED)
		in->sp.inval_pending++;
	pthread_mutex_unlock(&in->m);
	return v;
}

void stamp_change_begin(struct hotfs_inode *in, const struct stat *st)
{
	/* the first of a burst decides: did it start from what the
	 * kernel's pages go with?  (If not, the file changed behind the
	 * mount before, and the next open or check must see that.) */
	if (!in->sp.chg_inflight++)
		in->sp.chg_ours = st && stamp_same_locked(in, st);
}

void stamp_change_end(struct hotfs_inode *in, const struct stat *st)
{
	if (!in->sp.chg_inflight)
		return;
	if (--in->sp.chg_inflight == 0 && in->sp.chg_ours && st)
		record(in, st, true);
}

void stamp_begin(struct hotfs_inode *in, int fd)
{
	struct stat st;
	bool have;

	pthread_mutex_lock(&in->m);
	have = fstatat(fd, "", &st, AT_EMPTY_PATH) == 0;
	stamp_change_begin(in, have ? &st : NULL);
	pthread_mutex_unlock(&in->m);
}

void stamp_end(struct hotfs_inode *in, int fd)
{
	struct stat st;
	bool have;

	pthread_mutex_lock(&in->m);
	have = stamp_change_last(in) &&
	       fstatat(fd, "", &st, AT_EMPTY_PATH) == 0;
	stamp_change_end(in, have ? &st : NULL);
	pthread_mutex_unlock(&in->m);
}

bool stamp_open_locked(struct hotfs_inode *in, int fd, bool never,
		       bool writers, bool *keep)
{
	enum stamp_verdict v = STAMP_NEW;	/* unknown: drop them */
	struct stat st;
	bool pending;

	/* from the server on a remote source (close-to-open: another
	 * client's close is seen) */
	if (srcprobe_stat_sync(fd, &st) == 0) {
		v = stamp_check_locked(in, &st);
		in->sp.stamp_checked_ns = clock_mono_ns();
	}
	pending = stamp_inval_pending(in);
	if (pending)
		stamp_wait_inval_locked(in);
	*keep = never || (v == STAMP_SAME && !pending &&
			  (in->sp.stamp_settled || writers));
	/* the same stamp, recorded within its clock tick: the kernel's
	 * pages may hold a version written earlier in that tick; dropped
	 * now, the ones read from here on are of the version the stamp
	 * names once the tick is over */
	if (!*keep && v == STAMP_SAME && in->sp.stamp_valid)
		in->sp.stamp_settled = !stamp_racy_now(in->sp.stamp.mtime_ns,
						       in->sp.stamp.ctime_ns);
	return (v == STAMP_CHANGED || pending) && !never;
}

bool stamp_fresh_locked(const struct hotfs_inode *in, int64_t limit_ns)
{
	return in->sp.stamp_valid && in->sp.stamp_settled &&
	       in->sp.stamp_checked_ns &&
	       clock_mono_ns() - in->sp.stamp_checked_ns < limit_ns &&
	       !in->sp.chg_inflight && !stamp_inval_pending(in);
}
