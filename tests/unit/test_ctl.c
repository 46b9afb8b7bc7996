// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the control channel's command parser (src/lib/ctl_parse.c):
 * the commands written to .hotfs/ctl, and "set"'s KEY=VALUE list, against
 * the list of its keys (src/lib/ctl_keys.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hotfs/ctl.h"
#include "hotfs/opts.h"

static int parse(const char *buf, size_t size, char *cmd, size_t cmdsz)
{
	return ctl_parse_cmd(buf, size, cmd, cmdsz);
}

static void test_commands(void **state)
{
	char cmd[64];

	(void)state;
	assert_int_equal(parse("reset-stats", 11, cmd, sizeof(cmd)),
			 CTL_RESET_STATS);
	assert_int_equal(parse("reset-stats\n", 12, cmd, sizeof(cmd)),
			 CTL_RESET_STATS);
	assert_int_equal(parse("store on", 8, cmd, sizeof(cmd)),
			 CTL_STORE_ON);
	assert_int_equal(parse("store on \n\n", 11, cmd, sizeof(cmd)),
			 CTL_STORE_ON);
	assert_string_equal(cmd, "store on");
}

static void test_not_commands(void **state)
{
	static const char *const bad[] = {
		"store", "store off", "store  on", " store on", "store onx",
		"STORE ON", "",
	};
	char cmd[64];
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], strlen(bad[i]), cmd,
				       sizeof(cmd)), -EINVAL);
		assert_string_equal(cmd, bad[i]);
	}
	/* a NUL inside: not the command, whatever follows */
	assert_int_equal(parse("store on\0junk", 13, cmd, sizeof(cmd)),
			 -EINVAL);
	assert_int_equal(parse("store on", 8, cmd, 8), -E2BIG);
}

static void test_set_command(void **state)
{
	char cmd[64];

	(void)state;
	assert_int_equal(parse("set threshold=3\n", 16, cmd, sizeof(cmd)),
			 CTL_SET);
	assert_string_equal(cmd, "set threshold=3");
	assert_int_equal(parse("set", 3, cmd, sizeof(cmd)), -EINVAL);
	assert_int_equal(parse("setx=1", 6, cmd, sizeof(cmd)), -EINVAL);
}

static void test_set_values(void **state)
{
	struct ctl_set s;
	char err[600];

	(void)state;
	assert_int_equal(ctl_parse_set("threshold=3 promote_rate=16M", &s,
				       err, sizeof(err)), 0);
	assert_int_equal(s.mask, CTL_SET_THRESHOLD | CTL_SET_PROMOTE_RATE);
	assert_int_equal(s.threshold, 3);
	assert_true(s.promote_rate == 16ull << 20);
	/* commas, runs of separators, the last of a key given twice */
	assert_int_equal(ctl_parse_set(" seqcutoff=1G,,writemode=writethrough"
				       " ,inode_cache=5,seqcutoff=0 ", &s,
				       err, sizeof(err)), 0);
	assert_int_equal(s.mask, CTL_SET_SEQCUTOFF | CTL_SET_WRITEMODE |
			 CTL_SET_INODE_CACHE);
	assert_true(s.seqcutoff == 0);
	assert_int_equal(s.writemode, HOTFS_WRITETHROUGH);
	assert_true(s.inode_cache == 5);
	assert_int_equal(ctl_parse_set("promote_rate=0", &s, err,
				       sizeof(err)), 0);
	assert_true(s.promote_rate == 0 && s.mask == CTL_SET_PROMOTE_RATE);
	assert_int_equal(ctl_parse_set("write_budget=200G/day", &s, err,
				       sizeof(err)), 0);
	assert_true(s.write_budget == 200ull << 30 &&
		    s.mask == CTL_SET_WRITE_BUDGET);
	assert_int_equal(ctl_parse_set("write_budget=0", &s, err,
				       sizeof(err)), 0);
	assert_true(s.write_budget == 0);
	/* the watermarks: their order is the mount's to check (fs_set) */
	assert_int_equal(ctl_parse_set("dirty_high=80,dirty_low=90", &s, err,
				       sizeof(err)), 0);
	assert_int_equal(s.mask, CTL_SET_DIRTY_HIGH | CTL_SET_DIRTY_LOW);
	assert_int_equal(s.dirty_high, 80);
	assert_int_equal(s.dirty_low, 90);
}

static void expect_set_error(const char *args, const char *words)
{
	struct ctl_set s;
	char err[600];

	assert_int_equal(ctl_parse_set(args, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(s.mask, 0);	/* all or nothing */
	if (!strstr(err, words))
		fail_msg("'%s': '%s' lacks '%s'", args, err, words);
}

static void test_set_refused(void **state)
{
	(void)state;
	/* every fixed key named, whatever else is wrong */
	expect_set_error("threshold=3 extent=1M nocache cachedir=/x",
			 "fixed until the next mount (only threshold, "
			 "promote_rate, seqcutoff, writemode, inode_cache, "
			 "write_budget, dirty_high, dirty_low can change "
			 "while mounted): extent, "
			 "nocache, "
			 "cachedir");
	expect_set_error("bogus=1 extent=1M", ": extent");
	expect_set_error("threshold=0", "invalid threshold '0': 1..16");
	expect_set_error("threshold=17", "invalid threshold");
	expect_set_error("threshold=-1", "invalid threshold");
	expect_set_error("threshold=2x", "invalid threshold");
	expect_set_error("promote_rate=fast", "invalid promote_rate");
	expect_set_error("write_budget=1G/week", "invalid write_budget");
	expect_set_error("seqcutoff=-1", "invalid seqcutoff");
	expect_set_error("writemode=writeback", "writemode=writeback: not "
			 "switched to while mounted");
	expect_set_error("writemode=sometimes", "invalid writemode");
	expect_set_error("writeback_delay=5", "fixed until the next mount");
	expect_set_error("dirty_high=0", "invalid dirty_high '0': a "
			 "percentage of the writeback log, 1..99");
	expect_set_error("dirty_high=100", "invalid dirty_high");
	expect_set_error("dirty_low=-5", "invalid dirty_low");
	expect_set_error("dirty_low=5%", "invalid dirty_low");
	expect_set_error("inode_cache=0", "invalid inode_cache");
	expect_set_error("bogus=1", "unknown option 'bogus'");
	expect_set_error("threshold", "expected KEY=VALUE");
	expect_set_error("", "nothing to set");
	expect_set_error(" , ", "nothing to set");
}

/*
 * The one list of the keys set takes (hotfs/ctl_keys.h): each a bit of its
 * own, found by name, and one the parser knows (a bad value is refused as
 * that key's, never as unknown or fixed at mount); ctl_keys_list names
 * them all, in order.  README.md and man/ are checked against the same
 * list, through hotfsctl's usage (test_hotfsctl.py).
 */
static void test_set_keys_table(void **state)
{
	char args[64], err[600], list[256], want[256] = "";
	struct ctl_set s;
	unsigned seen = 0;

	(void)state;
	assert_true(ctl_nkeys > 0);
	for (size_t i = 0; i < ctl_nkeys; i++) {
		const struct ctl_key *k = &ctl_keys[i];
		size_t n = strlen(k->name);

		assert_true(k->mask && !(k->mask & (k->mask - 1)));
		assert_false(seen & k->mask);
		seen |= k->mask;
		assert_ptr_equal(ctl_key_find(k->name, n), k);
		assert_null(ctl_key_find(k->name, n - 1));
		snprintf(args, sizeof(args), "%s=?", k->name);
		assert_int_equal(ctl_parse_set(args, &s, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, k->name) || strstr(err, "unknown option") ||
		    strstr(err, "fixed until"))
			fail_msg("'%s': '%s'", args, err);
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
			 "%s%s", i ? ", " : "", k->name);
	}
	ctl_keys_list(list, sizeof(list));
	assert_string_equal(list, want);
	ctl_keys_list(list, 6);
	assert_string_equal(list, "thres");
	assert_null(ctl_key_find("bogus", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_not_commands),
		cmocka_unit_test(test_set_command),
		cmocka_unit_test(test_set_values),
		cmocka_unit_test(test_set_refused),
		cmocka_unit_test(test_set_keys_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
