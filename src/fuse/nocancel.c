// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Whether this thread has made itself uncancellable, as every thread that
 * runs a handler does (src/fuse/fuse_i.h, hfs()): a file of its own, so
 * that the handlers' files depend on it alone.
 */
#include <stdbool.h>

#include "fuse_i.h"

__thread bool fuse_no_cancel;
