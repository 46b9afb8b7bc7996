// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfs's own options, as hotfs --help prints them before libfuse's
 * (each parsed in opts.c; man/hotfs.8 says more of each).
 */
#include <stdio.h>

#include "hotfs/opts.h"

void opt_help(void)
{
	printf(
"hotfs options:\n"
"    -o cachedir=DIR        cache store on the fast device (required)\n"
"    -o cachesize=SIZE      bytes of cache (K/M/G/T) or N%% of cachedir's fs\n"
"                           (default 90%% of its free space at creation)\n"
"    -o extent=SIZE         caching unit, power of two 4K..4M (256K)\n"
"    -o threshold=N         accesses before an extent is promoted (2)\n"
"    -o seqcutoff=SIZE      stop counting after SIZE of sequential reading\n"
"                           through one handle, 0 = off (0)\n"
"    -o promote_rate=SIZE   bytes per second promotion may read from the\n"
"                           source again, 0 = unlimited (8M)\n"
"    -o write_budget=SIZE[/day]  bytes a day promotions may write to the\n"
"                           cache device, 0 = no budget (0)\n"
"    -o read_ahead=SIZE     the kernel's read-ahead for files of the mount,\n"
"                           0 = the kernel's default (1M)\n"
"    -o writemode=MODE      writearound, writethrough or writeback\n"
"                           (writearound)\n"
"    -o writeback_delay=SECS  writeback: dirty data is held this long at\n"
"                           least before it is flushed (0)\n"
"    -o writeback_log=SIZE  writeback: the log of dirty data in cachedir\n"
"                           (256M)\n"
"    -o dirty_high=PCT      writeback: flush flat out once this share of\n"
"                           the log is in use (50)...\n"
"    -o dirty_low=PCT       ...down to this share (45); below it, flush\n"
"                           only while the source is idle\n"
"    -o revalidate=WHEN     open (check files at open, listings at\n"
"                           opendir), N seconds, or never (the tree changes\n"
"                           only through hotfs) (open)\n"
"    -o snapshot_interval=SECS  how often the metadata snapshot is\n"
"                           written while the tree changes (30)\n"
"    -o attr_timeout=SECS   kernel attribute cache timeout (1; 60 where\n"
"                           the source is watched)\n"
"    -o entry_timeout=SECS  kernel name lookup cache timeout (1; 60 where\n"
"                           the source is watched)\n"
"    -o nowatch             do not watch the source with inotify\n"
"    -o reset               empty a cachedir made for another source\n"
"    -o cache_required      refuse to mount when the cache store cannot be\n"
"                           used (by default the tree mounts without it)\n"
"    -o nonempty            mount over a non-empty directory or a hotfs\n"
"                           mount\n"
"    -o nocache             plain passthrough, no cache store\n"
"    -o ctldir=NAME         name of the control directory (.hotfs)\n"
"    -o inode_cache=N       source inodes kept open after the kernel forgets\n"
"                           them, so lookups need no disk read (100000)\n"
"    -o fuse_uring[=WHEN]   FUSE requests through io_uring queues: on (the\n"
"                           mount fails without them), off, or auto (auto)\n"
"    -o passthrough=WHEN    reads of wholly cached files by the kernel from\n"
"                           a copy, without the daemon: on, off, or auto\n"
"                           (auto: where the cachedir is Btrfs)\n"
"    -o passthrough_min=SIZE  smaller files get no copy (1M)\n"
"    -o scrub_rate=RATE     copies re-checked at most RATE bytes/s (16M)\n");
}
