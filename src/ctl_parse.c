// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control channel's parsers (see include/hotfs/ctl.h): a command
 * written to .hotfs/ctl, and hotfsctl's ioctl requests.  Both take bytes
 * from any process allowed to open ctl or send the ioctls, so they are
 * kept here apart from FUSE and from any state: pure functions, fuzzed
 * by tests/fuzz/fuzz_ctl.c.
 */
#include <errno.h>
#include <string.h>

#include "hotfs/ctl.h"
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
	return -EINVAL;
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
