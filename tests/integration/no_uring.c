// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * no_uring CMD [ARG...]: run CMD where io_uring is refused, as a
 * container's seccomp profile refuses it (Docker's default answers
 * io_uring_setup, io_uring_enter and io_uring_register with EPERM).  A
 * seccomp filter is the only way to refuse it to one process: liburing
 * makes its system calls itself, not through libc, so an LD_PRELOAD shim
 * would not see them, and kernel.io_uring_disabled is machine-wide.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

#define REFUSE(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

int main(int argc, char **argv)
{
#ifdef ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		REFUSE(__NR_io_uring_setup),
		REFUSE(__NR_io_uring_enter),
		REFUSE(__NR_io_uring_register),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(f) / sizeof(f[0]),
		.filter = f,
	};

	if (argc < 2) {
		fprintf(stderr, "usage: no_uring CMD [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == -1) {
		fprintf(stderr, "no_uring: seccomp: %s\n", strerror(errno));
		return 77;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_uring: %s: %s\n", argv[1], strerror(errno));
	return 127;
#else
	(void)argc;
	(void)argv;
	fprintf(stderr, "no_uring: no seccomp filter for this architecture\n");
	return 77;
#endif
}
