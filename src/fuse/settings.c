// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Options changed while mounted (see include/hotfs/settings.h).
 *
 * Each running part takes its new value in one atomic store and reads it
 * once per request, so a request sees the old value or the new one,
 * never a mix: every value is safe at any moment (a threshold or a rate
 * only changes what is promoted next; writearound and writethrough both
 * keep the cache coherent, and a write is done by one or the other;
 * writeback is fixed while mounted: its dirty data would have to be
 * flushed, and writes held, to leave it; its watermarks are not: the
 * flusher reads them before each round).
 * What is fixed at mount (the store's layout, the kernel's view, the
 * session's parts) is refused by ctl_parse_set before it gets here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "hotfs/budget.h"
#include "hotfs/fs.h"
#include "hotfs/log.h"
#include "hotfs/policy.h"
#include "hotfs/promote.h"
#include "hotfs/settings.h"
#include "hotfs/wb.h"

/* protects the fields of fs->o that fs_set changes */
static pthread_mutex_t settings_mutex = PTHREAD_MUTEX_INITIALIZER;

void settings_lock(void)
{
	pthread_mutex_lock(&settings_mutex);
}

void settings_unlock(void)
{
	pthread_mutex_unlock(&settings_mutex);
}

/*
 * dirty_high and dirty_low, checked together (either may come alone) and
 * given to the flusher, the settings lock held.  0, or -EINVAL with why
 * in msg (nothing changed).
 */
static int set_watermarks(struct hotfs *fs, const struct ctl_set *set,
			  char *msg, size_t len)
{
	struct hotfs_opts *o = fs->o;
	unsigned high = set->mask & CTL_SET_DIRTY_HIGH ?
			set->dirty_high : o->dirty_high;
	unsigned low = set->mask & CTL_SET_DIRTY_LOW ?
		       set->dirty_low : o->dirty_low;

	if (o->writemode != HOTFS_WRITEBACK) {
		snprintf(msg, len, "%s: applies to writemode=writeback "
			 "only", set->mask & CTL_SET_DIRTY_HIGH ?
			 "dirty_high" : "dirty_low");
		return -EINVAL;
	}
	if (low > high) {
		snprintf(msg, len, "dirty_low=%u would be above "
			 "dirty_high=%u: 0 < dirty_low <= dirty_high "
			 "< 100", low, high);
		return -EINVAL;
	}
	o->dirty_high = high;
	o->dirty_low = low;
	wb_set_watermarks(fs->wb, high, low);
	return 0;
}

/* The settings now in force, one line into msg (c: the store, if any;
 * the settings lock held). */
static void settings_now(const struct hotfs_opts *o,
			 const struct hotfs_cache *c, char *msg, size_t len)
{
	char wb_summary[64] = "";

	if (o->writemode == HOTFS_WRITEBACK)
		snprintf(wb_summary, sizeof(wb_summary),
			 ",dirty_high=%u,dirty_low=%u", o->dirty_high,
			 o->dirty_low);
	snprintf(msg, len, "threshold=%d,promote_rate=%llu,write_budget=%llu,"
		 "seqcutoff=%llu,writemode=%s,inode_cache=%llu%s%s",
		 o->threshold, (unsigned long long)o->promote_rate,
		 (unsigned long long)o->write_budget,
		 (unsigned long long)o->seqcutoff,
		 o->writemode == HOTFS_WRITETHROUGH ? "writethrough" :
		 o->writemode == HOTFS_WRITEBACK ? "writeback" :
		 "writearound", (unsigned long long)o->inode_cache,
		 wb_summary, c ? "" : " (no store: they apply when it opens)");
}

int fs_set(struct hotfs *fs, const struct ctl_set *set, char *msg,
	   size_t len)
{
	struct hotfs_opts *o = fs->o;
	struct hotfs_cache *c;
	int r = 0;

	pthread_mutex_lock(&settings_mutex);
	c = fs_cache(fs);
	/* retained inodes are swept (deleted files let go) by the periodic
	 * work, which runs with a store; inode_cache=0 at mount is for
	 * good (main.c: no listings either) */
	if ((set->mask & CTL_SET_INODE_CACHE) && (!c || !o->inode_cache)) {
		snprintf(msg, len, "inode_cache: fixed until the next mount "
			 "(%s)", o->inode_cache ? "the mount has no store" :
			 "mounted with inode_cache=0");
		r = -EINVAL;
		goto out;
	}
	/* the dirty data would have to be flushed first, and writes held
	 * meanwhile */
	if ((set->mask & CTL_SET_WRITEMODE) &&
	    o->writemode == HOTFS_WRITEBACK) {
		snprintf(msg, len, "writemode: fixed while mounted with "
			 "writemode=writeback (until the next mount)");
		r = -EINVAL;
		goto out;
	}
	if (set->mask & (CTL_SET_DIRTY_HIGH | CTL_SET_DIRTY_LOW)) {
		r = set_watermarks(fs, set, msg, len);
		if (r < 0)
			goto out;
	}
	if (set->mask & CTL_SET_THRESHOLD) {
		o->threshold = (int)set->threshold;
		if (c)
			r = pol_set_threshold(c->pol, set->threshold);
	}
	if (set->mask & CTL_SET_PROMOTE_RATE) {
		o->promote_rate = set->promote_rate;
		if (c)
			pr_set_rate(c->pr, set->promote_rate);
	}
	if (set->mask & CTL_SET_WRITE_BUDGET) {
		o->write_budget = set->write_budget;
		if (c)
			budget_set(&c->budget, set->write_budget);
	}
	if (set->mask & CTL_SET_SEQCUTOFF) {
		o->seqcutoff = set->seqcutoff;
		if (c)
			atomic_store(&c->seqcutoff, set->seqcutoff);
	}
	if (set->mask & CTL_SET_WRITEMODE) {
		o->writemode = set->writemode;
		if (c)
			atomic_store(&c->writemode,
				     (enum hotfs_writemode)set->writemode);
	}
	if (set->mask & CTL_SET_INODE_CACHE) {
		o->inode_cache = set->inode_cache;
		ino_set_retain(fs->it, set->inode_cache);
	}
	settings_now(o, c, msg, len);
	hotfs_log(LOG_NOTICE, "set: %s\n", msg);
out:
	pthread_mutex_unlock(&settings_mutex);
	return r;
}

char *fs_opts_summary(struct hotfs *fs)
{
	const struct hotfs_opts *o = fs->o;
	char wb[128] = "";
	char *s;
	int n;

	pthread_mutex_lock(&settings_mutex);
	if (o->writemode == HOTFS_WRITEBACK)
		snprintf(wb, sizeof(wb), "writeback_delay=%g,dirty_high=%u,"
			 "dirty_low=%u,writeback_log=%llu,", o->writeback_delay,
			 o->dirty_high, o->dirty_low,
			 (unsigned long long)(o->writeback_log ?
					      o->writeback_log :
					      HOTFS_WBLOG_DEFAULT));
	n = asprintf(&s, "%sextent=%u,threshold=%d,seqcutoff=%llu,"
		     "promote_rate=%llu,write_budget=%llu,read_ahead=%llu,"
		     "writemode=%s,%s"
		     "revalidate=%s,attr_timeout=%g,entry_timeout=%g,"
		     "inode_cache=%llu,ctldir=%s,passthrough=%s,"
		     "passthrough_min=%llu,scrub_rate=%llu%s%s%s%s%s",
		     o->nocache ? "nocache," : "", o->extent, o->threshold,
		     (unsigned long long)o->seqcutoff,
		     (unsigned long long)o->promote_rate,
		     (unsigned long long)o->write_budget,
		     (unsigned long long)o->read_ahead,
		     o->writemode == HOTFS_WRITETHROUGH ? "writethrough" :
		     o->writemode == HOTFS_WRITEBACK ? "writeback" :
		     "writearound", wb,
		     o->revalidate_str ? o->revalidate_str : "open",
		     o->attr_timeout, o->entry_timeout,
		     (unsigned long long)o->inode_cache, o->ctldir,
		     o->passthrough == HOTFS_PT_ON ? "on" :
		     o->passthrough == HOTFS_PT_OFF ? "off" : "auto",
		     (unsigned long long)o->passthrough_min,
		     (unsigned long long)(o->scrub_rate == UINT64_MAX ? 0 :
					  o->scrub_rate),
		     o->allow_other ? ",allow_other" : "",
		     /* main adds it with allow_other */
		     o->default_permissions || o->allow_other ?
		     ",default_permissions" : "",
		     o->nowatch ? ",nowatch" : "",
		     o->cache_required ? ",cache_required" : "",
		     o->ro ? ",ro" : "");
	pthread_mutex_unlock(&settings_mutex);
	return n < 0 ? NULL : s;
}
