// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for src/cache/budget.c: the SSD write budget's pace, the share
 * admitted near it, and the day's count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hotfs/budget.h"

#define GiB (1ull << 30)
#define DAY0 (20000ull * BUDGET_DAY)	/* a UTC midnight */

static void test_off_admits_all(void **state)
{
	struct hotfs_budget b;

	(void)state;
	budget_init(&b, 0);
	assert_true(budget_admit(&b, DAY0 + 5, 1ull << 50, 0, 0.99));
	assert_int_equal(budget_pace(&b, DAY0 + 5), 0);
}

static void test_pace(void **state)
{
	struct hotfs_budget b;

	(void)state;
	budget_init(&b, 24 * GiB);
	/* an hour's worth up front, then 1 GiB an hour */
	assert_true(budget_pace(&b, DAY0) == GiB);
	assert_true(budget_pace(&b, DAY0 + 3600) == 2 * GiB);
	assert_true(budget_pace(&b, DAY0 + 23 * 3600) == 24 * GiB);
	assert_true(budget_pace(&b, DAY0 + BUDGET_DAY - 1) == 24 * GiB);
	/* the next day starts over */
	assert_true(budget_pace(&b, DAY0 + BUDGET_DAY) == GiB);
}

static void test_admission_near_the_pace(void **state)
{
	struct hotfs_budget b;
	unsigned i, yes = 0;

	(void)state;
	budget_init(&b, 24 * GiB);
	/* below 90% of the pace: all */
	assert_true(budget_admit(&b, DAY0, GiB / 2, 0, 0.999));
	/* at 95%: about half of the draws */
	for (i = 0; i < 1000; i++)
		yes += budget_admit(&b, DAY0, GiB - GiB / 20, 0, i / 1000.0);
	assert_in_range(yes, 480, 520);
	/* at the pace: none, until the day moves on */
	assert_false(budget_admit(&b, DAY0, GiB, 0, 0.0));
	assert_false(budget_admit(&b, DAY0 + 1800, 2 * GiB, 0, 0.0));
	assert_true(budget_admit(&b, DAY0 + 7200, 2 * GiB, 0, 0.5));
	assert_true(budget_used(&b) == 2 * GiB);
}

/* A candidate is weighed with what its insert would write: one that would
 * pass the pace is refused even below 90% of it. */
static void test_cost_counts(void **state)
{
	struct hotfs_budget b;

	(void)state;
	budget_init(&b, 24 * GiB);
	/* the pace at midnight: 1 GiB */
	assert_true(budget_admit(&b, DAY0, GiB / 2, GiB / 4, 0.999));
	assert_false(budget_admit(&b, DAY0, GiB / 2, GiB / 2, 0.0));
	assert_false(budget_admit(&b, DAY0, GiB / 2, GiB, 0.0));
	/* what lands exactly at the pace is refused with the rest of it */
	assert_false(budget_admit(&b, DAY0, GiB - 4096, 4096, 0.0));
	assert_true(budget_admit(&b, DAY0, GiB - 4096 * 1000, 4096, 0.0));
	/* a cost past any count never wraps into an admission */
	assert_false(budget_admit(&b, DAY0, 4096, UINT64_MAX - 100, 0.0));
}

/* A budget of a few bytes a day admits nothing (its pace rounds to 0). */
static void test_tiny_budget(void **state)
{
	struct hotfs_budget b;

	(void)state;
	budget_init(&b, 1);
	assert_int_equal(budget_pace(&b, DAY0), 0);
	assert_false(budget_admit(&b, DAY0, 0, 0, 0.0));
	assert_false(budget_admit(&b, DAY0 + 100, 4096, 0, 0.0));
}

static void test_new_day_counts_again(void **state)
{
	struct hotfs_budget b;

	(void)state;
	budget_init(&b, 24 * GiB);
	assert_false(budget_admit(&b, DAY0 + 100, 5 * GiB, 0, 0.0));
	/* midnight: what was written yesterday does not count today */
	assert_true(budget_admit(&b, DAY0 + BUDGET_DAY + 10, 5 * GiB, 0, 0.99));
	assert_int_equal(budget_used(&b), 0);
	budget_note(&b, DAY0 + BUDGET_DAY + 20, 5 * GiB + 4096);
	assert_int_equal(budget_used(&b), 4096);
	/* a store opened again counts from zero */
	budget_note(&b, DAY0 + BUDGET_DAY + 30, 100);
	assert_int_equal(budget_used(&b), 100);
	/* the budget changed while mounted */
	budget_set(&b, 0);
	assert_true(budget_admit(&b, DAY0 + BUDGET_DAY + 40, 1ull << 50, 0, 0.9));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_admits_all),
		cmocka_unit_test(test_pace),
		cmocka_unit_test(test_admission_near_the_pace),
		cmocka_unit_test(test_cost_counts),
		cmocka_unit_test(test_new_day_counts_again),
		cmocka_unit_test(test_tiny_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
