/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SSD write budget (write_budget=BYTES/day, src/cache/budget.c): a cap on
 * what promotions write to the cache device in a day, for SSDs whose
 * endurance is rated in drive writes per day.
 *
 * The day is the UTC calendar day.  By any moment of it the store may
 * have written its pace: the share of the day's budget for the time
 * gone, plus one hour's worth (so that a cold start can warm up at once),
 * never more than the day's budget.  A candidate is weighed with what
 * its insert would write (the record, its padding, the summary blocks of
 * the commit it owes: st_insert_cost).  Below 90% of the pace every
 * candidate is admitted; between 90% and 100% a share falling linearly
 * to none (chosen at random, so no file or extent is favoured); one that
 * would pass the pace, none until it moves on.  What is counted is
 * everything the store wrote since the mount (data, padding, summaries,
 * records copied forward): a restart starts the day's count again.
 * hotfsctl warm and writethrough's updates are not held to it (they are
 * asked for, or replace bytes the store holds).
 *
 * Threads: budget_admit is called by the promoter and by writeback's
 * flush; the others by any thread.  The state is atomics; a race at
 * midnight costs at most one candidate's decision, and the promoter and
 * a flush admitted at the same moment may pass the pace by one record.
 */
#ifndef HOTFS_BUDGET_H
#define HOTFS_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define BUDGET_DAY	86400u

struct hotfs_budget {
	_Atomic uint64_t per_day;	/* bytes, 0 = no budget */
	_Atomic uint64_t day;		/* UTC day number of base */
	_Atomic uint64_t base;		/* store's bytes written then */
	_Atomic uint64_t written;	/* the last count seen */
};

void budget_init(struct hotfs_budget *b, uint64_t per_day);
/* write_budget= while mounted (hotfsctl set): 0 turns it off. */
void budget_set(struct hotfs_budget *b, uint64_t per_day);
/* The store has written written bytes since it opened, at now (unix
 * seconds): the count starts again at each new day. */
void budget_note(struct hotfs_budget *b, uint64_t now, uint64_t written);
/* Bytes written today (since the mount, if it was today). */
uint64_t budget_used(struct hotfs_budget *b);
/* What the store may have written by now (the pace), 0 without budget. */
uint64_t budget_pace(const struct hotfs_budget *b, uint64_t now);
/* May one more candidate be promoted, whose insert would write cost
 * bytes (st_insert_cost), with r uniform in [0, 1)?  Never if what was
 * written today and cost pass the pace. */
bool budget_admit(struct hotfs_budget *b, uint64_t now, uint64_t written,
		  uint64_t cost, double r);

#endif
