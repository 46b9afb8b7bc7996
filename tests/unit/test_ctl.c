// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the control channel's command parser (src/ctl_parse.c):
 * the commands written to .hotfs/ctl.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hotfs/ctl.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_not_commands),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
