// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The syntax of option values shared by the command line (opts.c) and
 * hotfsctl set (ctl_parse.c): sizes and bytes a day (src/lib/optval.c).
 */
#ifndef HOTFS_OPTVAL_H
#define HOTFS_OPTVAL_H

#include <stdint.h>

/*
 * Parse a size: a decimal number with an optional K, M, G, T suffix
 * (powers of 1024, case-insensitive, an optional trailing "B" or "iB").
 * If pct is not NULL, "N%" (1..100) is accepted and stored there.
 */
int opt_parse_size(const char *s, uint64_t *bytes, unsigned *pct);
/* "SIZE" or "SIZE/day" (write_budget=): bytes a day, 0 = none. */
int opt_parse_per_day(const char *s, uint64_t *bytes);

#endif
