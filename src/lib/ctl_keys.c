// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The keys hotfsctl set takes (see include/hotfs/ctl_keys.h).  A leaf:
 * no other file of src/ is called from here.
 */
#include <stdio.h>
#include <string.h>

#include "hotfs/ctl_keys.h"

const struct ctl_key ctl_keys[] = {
	{ "threshold", CTL_SET_THRESHOLD },
	{ "promote_rate", CTL_SET_PROMOTE_RATE },
	{ "seqcutoff", CTL_SET_SEQCUTOFF },
	{ "writemode", CTL_SET_WRITEMODE },
	{ "inode_cache", CTL_SET_INODE_CACHE },
	{ "write_budget", CTL_SET_WRITE_BUDGET },
	{ "dirty_high", CTL_SET_DIRTY_HIGH },
	{ "dirty_low", CTL_SET_DIRTY_LOW },
};
const size_t ctl_nkeys = sizeof(ctl_keys) / sizeof(ctl_keys[0]);

const struct ctl_key *ctl_key_find(const char *name, size_t n)
{
	for (size_t i = 0; i < ctl_nkeys; i++)
		if (strlen(ctl_keys[i].name) == n &&
		    strncmp(ctl_keys[i].name, name, n) == 0)
			return &ctl_keys[i];
	return NULL;
}

void ctl_keys_list(char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < ctl_nkeys && used < len; i++) {
		int r = snprintf(buf + used, len - used, "%s%s",
				 i ? ", " : "", ctl_keys[i].name);

		if (r < 0)
			break;
		used += (size_t)r;
	}
}
