// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Acting as the caller (see include/hotfs/cred.h).  setfsuid/setfsgid
 * and the raw setgroups syscall are per thread (glibc's setgroups()
 * wrapper would change every thread of the process).  The umask is per
 * process; a worker thread gets its own with unshare(CLONE_FS) (hotfs
 * never changes directory, so nothing else in the fs_struct matters).
 */
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hotfs/cred.h"

static __thread bool own_fs;

void cred_umask_enter(mode_t mask)
{
	if (!own_fs) {
		if (unshare(CLONE_FS) != 0)
			return;
		own_fs = true;
	}
	umask(mask);
}

void cred_umask_exit(void)
{
	if (own_fs)
		umask(0);
}

void cred_enter(const struct cred_who *w, bool as_root, struct cred *c)
{
	c->changed = false;
	if (!as_root || (w->uid == 0 && w->gid == 0))
		return;
	syscall(SYS_setgroups, (size_t)w->ngroups, w->groups);
	syscall(SYS_setfsgid, w->gid);
	syscall(SYS_setfsuid, w->uid);
	c->changed = true;
}

void cred_exit(struct cred *c)
{
	if (!c->changed)
		return;
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	syscall(SYS_setgroups, (size_t)0, NULL);
}
