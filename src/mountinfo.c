// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reading /proc/self/mountinfo (see include/hotfs/mountinfo.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hotfs/mountinfo.h"

/* Undo mountinfo's octal escapes (\040 for a space...) in place. */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

int mountinfo_next(FILE *f, char **line, size_t *cap,
		   struct mountinfo_ent *e)
{
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE ..." */
	while (getline(line, cap, f) != -1) {
		char *save = NULL, *tok;
		unsigned i;
		bool ok = true, sep = false;

		e->mnt = e->fstype = NULL;
		for (i = 0, tok = strtok_r(*line, " \n", &save); tok;
		     i++, tok = strtok_r(NULL, " \n", &save)) {
			if (i == 2 && sscanf(tok, "%u:%u", &e->major,
					     &e->minor) != 2)
				ok = false;
			if (i == 4)
				e->mnt = tok;
			if (sep) {
				e->fstype = tok;
				break;
			}
			if (i >= 6 && strcmp(tok, "-") == 0)
				sep = true;
		}
		if (!ok || !e->mnt || !e->fstype)
			continue;
		unescape(e->mnt);
		return 1;
	}
	return 0;
}
