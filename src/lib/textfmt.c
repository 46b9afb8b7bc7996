// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Text both the daemon and hotfsctl write (see include/hotfs/textfmt.h).
 * A leaf: no other file of src/ is called from here.
 */
#include "hotfs/textfmt.h"

void json_put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}
