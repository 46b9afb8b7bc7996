/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Acting as the caller (src/core/cred.c).  When the daemon runs as root,
 * operations that create objects run with the caller's fsuid, fsgid and
 * supplementary groups, per thread, so new files are owned as on a local
 * filesystem and the source applies its own rules (setgid directories,
 * ACL defaults); and with the caller's umask, which the source applies
 * itself (the kernel sends modes unmasked: a directory's default ACL
 * overrides the umask, as on a local filesystem).
 */
#ifndef HOTFS_CRED_H
#define HOTFS_CRED_H

#include <stdbool.h>
#include <sys/types.h>

#define CRED_MAX_GROUPS	256

/* Who a request comes from. */
struct cred_who {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
};

struct cred {
	bool changed;
};

/* Switch this thread's fs credentials to w's (unless w is root, or the
 * daemon is not: as_root false); cred_exit switches back. */
void cred_enter(const struct cred_who *w, bool as_root, struct cred *c);
void cred_exit(struct cred *c);

/* This thread's umask set to mask (its own fs_struct: unshare(CLONE_FS)
 * once); cred_umask_exit back to 0.  Only where the kernel left the
 * umask to the daemon. */
void cred_umask_enter(mode_t mask);
void cred_umask_exit(void);

#endif
