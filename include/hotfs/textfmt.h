/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text both the daemon and hotfsctl write or read (src/lib/textfmt.c, built
 * into both, as mountinfo.c is): JSON strings, and the size suffixes of
 * the mount options.
 */
#ifndef HOTFS_TEXTFMT_H
#define HOTFS_TEXTFMT_H

#include <stdio.h>

/* s as a JSON string, quoted and escaped (NULL: ""). */
void json_put_str(FILE *f, const char *s);

/* The shift of a size suffix K, M, G, T (powers of 1024; either case), or
 * 0 for any other character. */
static inline int size_suffix_shift(char c)
{
	switch (c) {
	case 'k': case 'K': return 10;
	case 'm': case 'M': return 20;
	case 'g': case 'G': return 30;
	case 't': case 'T': return 40;
	}
	return 0;
}

#endif
