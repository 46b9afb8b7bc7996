/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the source keeps across mounts and how fine its clock is, found
 * by probing it when hotfs starts (src/core/srcprobe.c).
 *
 * Inode numbers.  Cached data is keyed by the source's inode numbers,
 * and the metadata snapshot holds them too.  Local filesystems (ext4,
 * xfs, btrfs) and NFS keep them; a FUSE filesystem's numbers are its
 * daemon's (sshfs numbers files in the order they are looked up, per
 * mount: after a remount another file has the number, with the same size
 * and whole-second times), and so are those of CIFS with noserverino.
 * The probe: a sample of names in the source (the root's first
 * entries) with their inode numbers and times is kept in the cachedir
 * (PROBE_FILE); at the next start they are looked up again, in the
 * reverse order, before anything else, and any name with the same times
 * that now has another number proves the numbers are not kept.  FUSE
 * sources are never trusted (whatever a sample says: their numbers are
 * made up by a process that may be another one next time).  A source found so is cached for one run
 * only: the store, the pins, the access counts and the metadata snapshot
 * are emptied at each start.
 *
 * Timestamps.  A stamp (size, mtime, ctime) cannot tell apart two
 * versions of a file written within one tick of the source's clock
 * (whole seconds on sshfs, 2 s on FAT, 1 ns on ext4).  The granularity
 * is measured on the stamps the probe reads (the largest of 2 s, 1 s,
 * 100 ms, 10 ms, 1 ms, 1 us that divides every one of them; 2 s if
 * there were none), and data, listings and absent names whose
 * directory's or file's stamp is within that window of the clock are
 * "racy": not trusted later (the rule: hotfs/stamp.h).
 *
 * Remote sources (NFS, SMB, FUSE, Ceph, ...): other clients' changes
 * raise no inotify event, and the lower client caches attributes: hotfs
 * keeps no listings or absent names of its own for them, and takes the
 * stamp at open from the server (srcprobe_stat_sync).  Filesystems
 * mounted inside the source are not probed (cache.c keys them per run).
 */
#ifndef HOTFS_SRCPROBE_H
#define HOTFS_SRCPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define PROBE_FILE		"srcprobe"
/* names kept in the sample, and stamps read at most for the clock */
#define PROBE_NAMES		16
#define PROBE_STAMPS		64
/* a few ticks of the kernel's coarse clock, which stamps files on local
 * filesystems whatever their stored resolution (1 ns on ext4) */
#define PROBE_RACY_SLACK_NS	50000000LL

struct hotfs_srcinfo {
	bool ids_kept;		/* inode numbers name the same object
				 * across mounts of the source */
	bool remote;		/* a network (or FUSE) filesystem */
	int64_t gran_ns;	/* timestamp granularity measured */
	unsigned nstamps;	/* stamps it was measured on */
	unsigned checked;	/* sample names found again at start */
	char why[160];		/* !ids_kept: the reason, for status */
	char *sample;		/* the new sample, until srcprobe_save */
	size_t sample_len;
};

/* The process's probe result (set once by main, before the mount). */
extern struct hotfs_srcinfo hotfs_src;

/*
 * Probe the source (root_fd, O_PATH will do) against the sample in dirfd
 * (the cachedir; -1: no sample, ids are judged by the fs type alone).
 * Fills *si; returns 0 or -errno (si is then conservative: ids not kept,
 * 2 s).  Nothing is written to the cachedir here: a cachedir that turns
 * out foreign, damaged or in use must be left as it was.
 */
int srcprobe_run(int root_fd, int dirfd, struct hotfs_srcinfo *si);
/*
 * Once the store opened: keep the new sample in dirfd for the next start
 * (crash-safely, private), and free it.  0 or -errno.
 */
int srcprobe_save(int dirfd, struct hotfs_srcinfo *si);

/* A network or FUSE filesystem (statfs f_type). */
bool srcprobe_fs_remote(long f_type);

/*
 * The granularity of n timestamps (ns since the epoch; zeros are not
 * counted): the largest of 2 s, 1 s, 100 ms, 10 ms, 1 ms, 1 us that
 * divides every one, 1 ns if none does; 2 s when there is none.
 */
int64_t srcprobe_granularity(const int64_t *ts, size_t n);

/*
 * The sample's text (lines "INO MTIME_NS CTIME_NS NAME\n") against the
 * source: 1 if every name found with the same times has its number, 0 if
 * one has another (why says which), and -ENOENT if none was found (a
 * name whose times changed may name a new file: not counted).  Names are
 * looked up last line first.  *found: how many names were compared.
 */
int srcprobe_check(int root_fd, const char *text, size_t len,
		   unsigned *found, char *why, size_t whylen);

/*
 * Does the racy rule apply to data on this source: a network source, or
 * one whose clock ticks a millisecond or more?  (On a local filesystem
 * with fine stamps the kernel gives a change that follows a stat a fine
 * timestamp of its own: no two versions share one.)
 */
static inline bool srcprobe_coarse(const struct hotfs_srcinfo *si)
{
	return si->remote || si->gran_ns >= 1000000;
}


/*
 * fstat of fd (an O_PATH one will do), on a remote source from the server
 * rather than the lower client's attribute cache (statx with
 * AT_STATX_FORCE_SYNC): what close-to-open needs at an open.  0 or
 * -errno.
 */
int srcprobe_stat_sync(int fd, struct stat *st);

#endif
