// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The syntax of option values that the command line (opts.c) and
 * hotfsctl set (ctl_parse.c) share (see include/hotfs/optval.h).  A
 * leaf: only textfmt.c is called from here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hotfs/optval.h"
#include "hotfs/textfmt.h"

int opt_parse_per_day(const char *s, uint64_t *bytes)
{
	size_t n = strlen(s);
	char buf[64];

	if (n > 4 && strcmp(s + n - 4, "/day") == 0)
		n -= 4;
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	return opt_parse_size(buf, bytes, NULL);
}

int opt_parse_size(const char *s, uint64_t *bytes, unsigned *pct)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	/* a digit first: strtoull also takes leading white space and a
	 * sign, and "\t-5" would be 2^64 - 5 */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == '%') {
		if (!pct || end[1] || v < 1 || v > 100)
			return -EINVAL;
		*pct = (unsigned)v;
		*bytes = 0;
		return 0;
	}
	shift = size_suffix_shift(*end);
	if (shift)
		end++;
	if (shift && (*end == 'i' || *end == 'I') && (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	else if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*bytes = (uint64_t)v << shift;
	if (pct)
		*pct = 0;
	return 0;
}
