// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The SSD write budget (see include/hotfs/budget.h).
 */
#include "hotfs/budget.h"

void budget_init(struct hotfs_budget *b, uint64_t per_day)
{
	atomic_store(&b->per_day, per_day);
	atomic_store(&b->day, 0);
	atomic_store(&b->base, 0);
	atomic_store(&b->written, 0);
}

void budget_set(struct hotfs_budget *b, uint64_t per_day)
{
	atomic_store(&b->per_day, per_day);
}

void budget_note(struct hotfs_budget *b, uint64_t now, uint64_t written)
{
	uint64_t day = now / BUDGET_DAY;

	if (written < atomic_load(&b->written))
		atomic_store(&b->base, 0);	/* the store was opened again */
	if (atomic_load(&b->day) != day) {
		/* a new day: what was written before it does not count (the
		 * first note: everything since the mount does) */
		atomic_store(&b->base, atomic_load(&b->day) ?
			     atomic_load(&b->written) : 0);
		atomic_store(&b->day, day);
	}
	atomic_store(&b->written, written);
}

uint64_t budget_used(struct hotfs_budget *b)
{
	uint64_t w = atomic_load(&b->written), base = atomic_load(&b->base);

	return w > base ? w - base : 0;
}

uint64_t budget_pace(const struct hotfs_budget *b, uint64_t now)
{
	uint64_t per_day = atomic_load(&b->per_day);
	uint64_t secs = now % BUDGET_DAY + 3600;
	unsigned __int128 p;

	if (!per_day)
		return 0;
	if (secs >= BUDGET_DAY)
		return per_day;
	p = (unsigned __int128)per_day * secs / BUDGET_DAY;
	return (uint64_t)p;
}

bool budget_admit(struct hotfs_budget *b, uint64_t now, uint64_t written,
		  uint64_t cost, double r)
{
	uint64_t pace, used, soft;

	budget_note(b, now, written);
	if (!atomic_load(&b->per_day))
		return true;
	/* a budget so small that its pace is 0 bytes admits nothing */
	pace = budget_pace(b, now);
	used = budget_used(b);
	if (cost > UINT64_MAX - used)
		return false;
	used += cost;
	soft = pace - pace / 10;
	if (used < soft)
		return true;
	if (used >= pace)
		return false;
	/* from all at 90% of the pace to none at it */
	return r < (double)(pace - used) / (double)(pace - soft);
}
