// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Whether a mount uses FUSE passthrough (hotfs/passthrough.h): the
 * build, the daemon's capability, the cachedir's filesystem.
 */
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include <fuse_lowlevel.h>

#include "hotfs/passthrough.h"

#ifndef BTRFS_SUPER_MAGIC
#define BTRFS_SUPER_MAGIC	0x9123683E
#endif
#define CAP_SYS_ADMIN_BIT	21

bool pt_built(void)
{
#ifdef FUSE_CAP_PASSTHROUGH
	return true;
#else
	return false;
#endif
}

bool pt_cap_sys_admin(void)
{
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return found && (eff >> CAP_SYS_ADMIN_BIT & 1);
}

bool pt_fs_checked(const char *path)
{
	char parent[4096], *slash;
	struct statfs sfs;

	if (!path)
		return false;
	/* a cachedir made at the mount: its parent's filesystem */
	if (statfs(path, &sfs) != 0) {
		snprintf(parent, sizeof(parent), "%s", path);
		slash = strrchr(parent, '/');
		if (!slash)
			return false;
		if (slash == parent)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (statfs(parent, &sfs) != 0)
			return false;
	}
	return (unsigned long)sfs.f_type == (unsigned long)BTRFS_SUPER_MAGIC;
}

bool pt_decide(enum hotfs_passthrough mode, const struct pt_env *env,
	       const char **why)
{
	if (mode == HOTFS_PT_OFF) {
		*why = "off";
		return false;
	}
	if (!env->built) {
		*why = "off: this build's libfuse has no passthrough "
		       "(3.17 or later: meson -Dlibfuse=bundled)";
		return false;
	}
	if (!env->cache) {
		*why = "off: no cache store";
		return false;
	}
	if (env->writeback) {
		*why = "off: writemode=writeback (the log's dirty data)";
		return false;
	}
	if (!env->cap) {
		*why = "off: the daemon lacks CAP_SYS_ADMIN, which the "
		       "kernel wants for backing files";
		return false;
	}
	if (mode == HOTFS_PT_AUTO && !env->checked) {
		*why = "off: auto leaves it off where the cachedir's "
		       "filesystem does not checksum data (passthrough=on "
		       "asks, with the scrub)";
		return false;
	}
	*why = env->checked ? "on" : "on, scrubbed";
	return true;
}
