// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control channel's parsers (see include/hotfs/ctl.h): a command
 * written to .hotfs/ctl, and hotfsctl's ioctl requests.  Both take bytes
 * from any process allowed to open ctl or send the ioctls, so they are
 * kept here apart from FUSE and from any state: pure functions, fuzzed
 * by tests/fuzz/fuzz_ctl.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotfs/ctl.h"
#include "hotfs/optval.h"
#include "hotfs/opts.h"
#include "hotfs/policy.h"
#include "hotfs/store.h"

int ctl_parse_cmd(const char *buf, size_t size, char *cmd, size_t cmdsz)
{
	size_t n = size;

	if (!cmdsz)
		return -E2BIG;
	cmd[0] = '\0';
	if (n >= cmdsz)
		return -E2BIG;
	memcpy(cmd, buf, n);
	cmd[n] = '\0';
	while (n && (cmd[n - 1] == '\n' || cmd[n - 1] == ' '))
		cmd[--n] = '\0';
	/* "reset-stats\0junk" is not reset-stats */
	if (strlen(cmd) == n && strcmp(cmd, "reset-stats") == 0)
		return CTL_RESET_STATS;
	if (strlen(cmd) == n && strcmp(cmd, "store on") == 0)
		return CTL_STORE_ON;
	if (strlen(cmd) == n && strncmp(cmd, "set ", 4) == 0)
		return CTL_SET;
	return -EINVAL;
}

/* hotfs's mount options that only a new mount can change (opts.c) */
static const char *const fixed_keys[] = {
	"cachedir", "cachesize", "extent", "read_ahead", "revalidate",
	"attr_timeout", "entry_timeout", "reset", "nocache", "nowatch",
	"cache_required", "nonempty", "ctldir", "allow_other",
	"default_permissions", "max_read", "writeback_delay",
	"writeback_log", "snapshot_interval",
};

static bool is_fixed(const char *key, size_t n)
{
	for (size_t i = 0; i < sizeof(fixed_keys) / sizeof(fixed_keys[0]); i++)
		if (strlen(fixed_keys[i]) == n &&
		    strncmp(fixed_keys[i], key, n) == 0)
			return true;
	return false;
}

/* 1..max in decimal, or -1. */
static long decimal(const char *v, long max)
{
	char *end;
	long t;

	errno = 0;
	t = strtol(v, &end, 10);
	if (errno || end == v || *end || *v < '0' || *v > '9' || t < 1 ||
	    t > max)
		return -1;
	return t;
}

/* One KEY=VALUE word (value NUL-terminated); 0 or -EINVAL with err. */
static int set_one(const char *key, const char *v, struct ctl_set *s,
		   char *err, size_t errlen)
{
	const struct ctl_key *k = ctl_key_find(key, strlen(key));
	char keys[256];
	uint64_t b;
	long t;

	switch (k ? k->mask : 0) {
	case CTL_SET_THRESHOLD:
		t = decimal(v, POL_COUNT_MAX);
		if (t < 0) {
			snprintf(err, errlen, "invalid threshold '%s': 1..%u",
				 v, POL_COUNT_MAX);
			return -EINVAL;
		}
		s->threshold = (unsigned)t;
		break;
	case CTL_SET_PROMOTE_RATE:
		if (opt_parse_size(v, &b, NULL) < 0) {
			snprintf(err, errlen, "invalid promote_rate '%s': "
				 "bytes per second (e.g. 50M, 0 = unlimited)",
				 v);
			return -EINVAL;
		}
		s->promote_rate = b;
		break;
	case CTL_SET_WRITE_BUDGET:
		if (opt_parse_per_day(v, &b) < 0) {
			snprintf(err, errlen, "invalid write_budget '%s': "
				 "bytes per day (e.g. 200G/day, 0 = off)", v);
			return -EINVAL;
		}
		s->write_budget = b;
		break;
	case CTL_SET_SEQCUTOFF:
		if (opt_parse_size(v, &b, NULL) < 0) {
			snprintf(err, errlen, "invalid seqcutoff '%s': a size "
				 "(0 = off)", v);
			return -EINVAL;
		}
		s->seqcutoff = b;
		break;
	case CTL_SET_WRITEMODE:
		if (strcmp(v, "writearound") == 0) {
			s->writemode = HOTFS_WRITEAROUND;
		} else if (strcmp(v, "writethrough") == 0) {
			s->writemode = HOTFS_WRITETHROUGH;
		} else if (strcmp(v, "writeback") == 0) {
			snprintf(err, errlen, "writemode=writeback: not "
				 "switched to while mounted (it is chosen at "
				 "mount)");
			return -EINVAL;
		} else {
			snprintf(err, errlen, "invalid writemode '%s': "
				 "writearound or writethrough", v);
			return -EINVAL;
		}
		break;
	case CTL_SET_DIRTY_HIGH:
	case CTL_SET_DIRTY_LOW:
		t = decimal(v, 99);
		if (t < 0) {
			snprintf(err, errlen, "invalid %s '%s': a percentage "
				 "of the writeback log, 1..99", key, v);
			return -EINVAL;
		}
		if (k->mask == CTL_SET_DIRTY_HIGH)
			s->dirty_high = (unsigned)t;
		else
			s->dirty_low = (unsigned)t;
		break;
	case CTL_SET_INODE_CACHE:
		t = decimal(v, 10000000);
		if (t < 0) {
			snprintf(err, errlen, "invalid inode_cache '%s': "
				 "1..10000000 inodes", v);
			return -EINVAL;
		}
		s->inode_cache = (uint64_t)t;
		break;
	default:
		ctl_keys_list(keys, sizeof(keys));
		snprintf(err, errlen, "unknown option '%s' (these can be set "
			 "while mounted: %s)", key, keys);
		return -EINVAL;
	}
	s->mask |= k->mask;
	return 0;
}

int ctl_parse_set(const char *args, struct ctl_set *s, char *err,
		  size_t errlen)
{
	char word[256], fixed[512] = "", first[512] = "", keys[256];
	const char *p = args;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if (errlen)
		err[0] = '\0';
	for (; *p; p += strcspn(p, " ,")) {
		size_t n, k;
		char *eq;

		p += strspn(p, " ,");
		n = strcspn(p, " ,");
		if (!n)
			break;
		k = strcspn(p, " ,=");
		if (is_fixed(p, k)) {
			/* name them all, not only the first */
			size_t used = strlen(fixed);

			snprintf(fixed + used, sizeof(fixed) - used, "%s%.*s",
				 used ? ", " : "", (int)k, p);
			continue;
		}
		if (*first)
			continue;
		if (n >= sizeof(word)) {
			snprintf(first, sizeof(first),
				 "option too long: '%.32s...'", p);
			continue;
		}
		memcpy(word, p, n);
		word[n] = '\0';
		eq = strchr(word, '=');
		if (!eq) {
			snprintf(first, sizeof(first),
				 "'%s': expected KEY=VALUE", word);
			continue;
		}
		*eq = '\0';
		set_one(word, eq + 1, s, first, sizeof(first));
	}
	ctl_keys_list(keys, sizeof(keys));
	if (*fixed) {
		snprintf(err, errlen, "fixed until the next mount (only %s "
			 "can change while mounted): %s", keys, fixed);
		r = -EINVAL;
	} else if (*first) {
		snprintf(err, errlen, "%s", first);
		r = -EINVAL;
	} else if (!s->mask) {
		snprintf(err, errlen, "nothing to set (KEY=VALUE: %s)", keys);
		r = -EINVAL;
	}
	if (r < 0)
		memset(s, 0, sizeof(*s));
	return r;
}

int ctl_ioc_decode(unsigned int cmd, unsigned int flags, const void *in,
		   size_t insz, size_t outsz, struct hotfs_ioc *io)
{
	if (_IOC_TYPE(cmd) != 'H')
		return -ENOTTY;
	if ((flags & FUSE_IOCTL_COMPAT) || insz < sizeof(*io) ||
	    outsz < sizeof(*io))
		return -EINVAL;
	memcpy(io, in, sizeof(*io));
	return 0;
}

void ctl_ioc_extents(const struct hotfs_ioc *io, uint64_t size,
		     unsigned int ext_shift, uint32_t *e0, uint32_t *e1)
{
	uint64_t end = io->len ? io->off + io->len : size, r0, r1;

	if (end > size || end < io->off)
		end = size;
	r0 = io->off >> ext_shift;
	r1 = io->off >= end ? r0 : ((end - 1) >> ext_shift) + 1;
	/* extents from ST_EXT_LIMIT on are never cached */
	*e0 = (uint32_t)(r0 < ST_EXT_LIMIT ? r0 : ST_EXT_LIMIT);
	*e1 = (uint32_t)(r1 < ST_EXT_LIMIT ? r1 : ST_EXT_LIMIT);
}
