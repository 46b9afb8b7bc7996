/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FUSE passthrough (-o passthrough): a read-only open of a file whose
 * whole copy the cachedir holds at the file's stamp (the file grain,
 * hotfs/filecopy.h) is answered with that copy as its backing file; the
 * kernel then reads it (read, mmap, splice) without the daemon.  The
 * opens themselves: hotfs/fop.h ("Passthrough opens").
 *
 * Needs libfuse >= 3.17 (the bundled build), a kernel that offers it at
 * FUSE_INIT, and CAP_SYS_ADMIN in the daemon (the kernel's rule for
 * backing files).  The daemon no longer sees these reads and cannot check
 * their bytes against the store's checksums, so auto (the default) uses
 * it only where the cachedir's filesystem checks its data itself
 * (Btrfs: a damaged block reads EIO, never other bytes); on uses it
 * elsewhere too.  The scrub (scrub_rate=, on either) re-reads each copy
 * from the disk and removes one that fails its hash or reads EIO, so
 * that the next opens read the store's checked extents: between two of
 * its passes a reader of a copy the disk damaged gets EIO on Btrfs, and
 * those bytes elsewhere (man hotfs).  off never.  Without a requirement it is off, said once in the log and
 * in the stats (passthrough:), never a refused mount.
 */
#ifndef HOTFS_PASSTHROUGH_H
#define HOTFS_PASSTHROUGH_H

#include <stdbool.h>
#include <stdint.h>

enum hotfs_passthrough {
	HOTFS_PT_AUTO,
	HOTFS_PT_ON,
	HOTFS_PT_OFF,
};

/* The scrub's rate where it runs and the user set none: bytes/s; each
 * copy checked at most once this often (seconds). */
#define HOTFS_SCRUB_RATE_DEFAULT	(16ull << 20)
#define HOTFS_SCRUB_INTERVAL_S		3600u

/* What the decision looks at. */
struct pt_env {
	bool built;		/* pt_built() */
	bool cap;		/* pt_cap_sys_admin() */
	bool checked;		/* the cachedir's filesystem checksums its
				 * data (Btrfs) */
	bool cache;		/* a store (not nocache) */
	bool writeback;		/* writemode=writeback */
};

/* Whether this build's libfuse has passthrough (>= 3.17). */
bool pt_built(void);
/* Whether the daemon has CAP_SYS_ADMIN in its effective set. */
bool pt_cap_sys_admin(void);
/* Whether the filesystem of path checksums its data (Btrfs). */
bool pt_fs_checked(const char *path);
/*
 * Ask the kernel for passthrough?  true, or false with *why (a static
 * string: "off: ..."); on true, *why is "on" or "on, scrubbed".
 */
bool pt_decide(enum hotfs_passthrough mode, const struct pt_env *env,
	       const char **why);

#endif
