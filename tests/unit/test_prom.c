// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the Prometheus exposition (src/fuse/prom.c): names, types,
 * labels for reasons, one TYPE line per family before its samples, the
 * store's state as one gauge per state, escaped label values.  (The
 * integration tests parse a live mount's with prometheus_client.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hotfs/prom.h"

static char *render(const struct stats_kv *kv, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	prom_write(f, kv, n);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static const struct stats_kv sample[] = {
	{ .key = "version", .kind = K_STR, .s = "0.1.0" },
	{ .key = "mountpoint", .kind = K_STR, .s = "/mnt/a \"b\"\\c" },
	{ .key = "store_state", .kind = K_STR, .s = "read-only" },
	{ .key = "read_engine", .kind = K_STR, .s = "pread" },
	{ .key = "read_hits", .kind = K_U64, .u = 42 },
	{ .key = "hit_ratio", .kind = K_F64, .f = 0.25 },
	{ .key = "not_promoted_seqcutoff", .kind = K_U64, .u = 7 },
	{ .key = "not_promoted_below_threshold", .kind = K_U64, .u = 9 },
	{ .key = "invalidations_user", .kind = K_U64, .u = 3 },
	{ .key = "cached_bytes", .kind = K_U64, .u = 1ull << 40 },
	{ .key = "brand_new_counter", .kind = K_U64, .u = 5 },
};

#define MNT "mountpoint=\"/mnt/a \\\"b\\\"\\\\c\""

static void test_names_types_labels(void **state)
{
	char *t = render(sample, sizeof(sample) / sizeof(sample[0]));

	(void)state;
	assert_non_null(strstr(t, "# TYPE hotfs_read_hits_total counter\n"
			       "hotfs_read_hits_total{" MNT "} 42\n"));
	assert_non_null(strstr(t, "# TYPE hotfs_hit_ratio gauge\n"
			       "hotfs_hit_ratio{" MNT "} 0.25\n"));
	/* reasons are labels of one family, in the table's order */
	assert_non_null(strstr(t, "# TYPE hotfs_not_promoted_total counter\n"
			"hotfs_not_promoted_total{" MNT
			",reason=\"below_threshold\"} 9\n"
			"hotfs_not_promoted_total{" MNT
			",reason=\"seqcutoff\"} 7\n"));
	assert_non_null(strstr(t, "hotfs_invalidations_total{" MNT
			       ",reason=\"user\"} 3\n"));
	assert_non_null(strstr(t, "# TYPE hotfs_cached_bytes gauge\n"
			       "hotfs_cached_bytes{" MNT "} 1099511627776\n"));
	assert_non_null(strstr(t, "hotfs_store_state{" MNT
			       ",state=\"ok\"} 0\n"));
	assert_non_null(strstr(t, "hotfs_store_state{" MNT
			       ",state=\"read-only\"} 1\n"));
	assert_non_null(strstr(t, "hotfs_store_state{" MNT
			       ",state=\"off\"} 0\n"));
	assert_non_null(strstr(t, "hotfs_info{" MNT ",version=\"0.1.0\","
			       "read_engine=\"pread\"} 1\n"));
	/* what the table does not know is still there, untyped */
	assert_non_null(strstr(t, "# TYPE hotfs_brand_new_counter untyped\n"
			       "hotfs_brand_new_counter{" MNT "} 5\n"));
	/* nothing of what is absent */
	assert_null(strstr(t, "hotfs_read_misses_total"));
	free(t);
}

/* Each family's TYPE once, before all its samples, which are together. */
static void test_families_contiguous(void **state)
{
	char *t = render(sample, sizeof(sample) / sizeof(sample[0]));
	char seen[64][96], cur[96] = "";
	unsigned nseen = 0;

	(void)state;
	for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
		char name[96];

		if (strncmp(line, "# HELP ", 7) == 0)
			continue;
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%95s", name), 1);
			for (unsigned i = 0; i < nseen; i++)
				assert_string_not_equal(seen[i], name);
			assert_true(nseen < 64);
			strcpy(seen[nseen++], name);
			strcpy(cur, name);
			continue;
		}
		assert_int_equal(sscanf(line, "%95[^{ ]", name), 1);
		assert_string_equal(name, cur);
	}
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_types_labels),
		cmocka_unit_test(test_families_contiguous),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
