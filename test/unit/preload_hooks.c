/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload_hooks.c — walks shim/hooks.def, the shim's one table of hooked
 * calls. Run with LD_PRELOAD=libdpsock_preload.so (meson sets it) and no
 * dpsockd: every hook must be exported by the .so (the symbol the program
 * binds to lives there), and on a bad descriptor and on a kernel socket the
 * hook must return exactly what libc returns, with the same errno.
 *
 * Usage: preload_hooks PATH_TO_libdpsock_preload.so
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define DPSOCK_HT_FD   0x1  /* the result is a new descriptor: compare >= 0 */
#define DPSOCK_HT_SKIP 0x2  /* not called here (fork: tested apart) */

/* the arguments' vocabulary of hooks.def */
static int BAD, K, EP, F;
static struct sockaddr_in SIN, KADDR;
static socklen_t lenv, ilenv;
static int ibuf, one = 1;
static char BUF[64];
static struct iovec iovv;
static struct msghdr msgv;
static struct mmsghdr mmsgv[1];
static off_t offv;
static off64_t off64v;
static struct pollfd pfdv;
static const struct timespec ts0;
static struct timeval tvv;
static fd_set fdsv;
static struct epoll_event evv, evsv[4];
static struct sigaction sav;
static int (*libc_dup)(int);
static char *ARGV[] = { "x", NULL }, *ENVP[] = { "A=1", NULL };
#define NOPATH "/nonexistent/dpsock-exec"

#define SA(x) ((struct sockaddr *)(x))
#define LEN() (lenv = sizeof(SIN), &lenv)
#define IBUF (&ibuf)
#define ILEN() (ilenv = sizeof(int), &ilenv)
#define IONE (&one)
#define IOV() (iovv = (struct iovec){ BUF, 4 }, &iovv)
#define MSG() (msgv = (struct msghdr){ .msg_iov = IOV(), .msg_iovlen = 1 }, &msgv)
#define MMSG() (mmsgv[0] = (struct mmsghdr){ .msg_hdr = *MSG() }, mmsgv)
#define OFF() (offv = 0, &offv)
#define OFF64() (off64v = 0, &off64v)
#define KDUP() (libc_dup(K))
#define PFD(x) pfd_of(x)
#define TS0() (&ts0)
#define TV0() (tvv = (struct timeval){ 0, 0 }, &tvv)
#define FDS(x) fds_of(x)
#define BADN() (BAD < 0 ? -1 : BAD + 1)
#define EV() (evv = (struct epoll_event){ .events = EPOLLIN | EPOLLOUT, .data.u64 = 7 }, &evv)
#define EVS() (evsv)
#define OLDSA() (&sav)

static struct pollfd *
pfd_of(int fd)
{
	pfdv.fd = fd;
	pfdv.events = POLLOUT;
	pfdv.revents = 0;
	return &pfdv;
}

static fd_set *
fds_of(int fd)
{
	FD_ZERO(&fdsv);
	if (fd >= 0 && fd < FD_SETSIZE)
		FD_SET(fd, &fdsv);
	return &fdsv;
}

static int failures, checks;

static void
compare(const char *name, const char *what, int flags, long r1, int e1, long r2, int e2)
{
	int (*shim_close)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "close");
	int ok;

	checks++;
	if (flags & DPSOCK_HT_FD) {
		ok = (r1 >= 0) == (r2 >= 0) && (r1 >= 0 || e1 == e2);
		if (r1 >= 0)
			shim_close((int)r1);
		if (r2 >= 0 && r2 != r1)
			shim_close((int)r2);
	} else {
		ok = r1 == r2 && (r1 >= 0 || e1 == e2);
	}
	if (!ok) {
		failures++;
		printf("FAIL %-16s %-8s libc %ld (%s)  shim %ld (%s)\n", name, what, r1,
		       r1 < 0 ? strerror(e1) : "-", r2, r2 < 0 ? strerror(e2) : "-");
	}
}

static void
drain(void)
{
	char b[64];

	while (recv(K, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

int
main(int argc, char **argv)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *so;
	int bads[2] = { -1, 777 }, nhooks = 0;
	char tmpl[] = "/tmp/preload_hooksXXXXXX";
	socklen_t kl = sizeof(KADDR);
	pid_t pid;
	int st;

	if (argc < 2 || libc == NULL) {
		fprintf(stderr, "usage: %s PATH_TO_libdpsock_preload.so (run under LD_PRELOAD)\n",
			argv[0]);
		return 2;
	}
	so = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (so == NULL) {
		printf("skip: %s is not preloaded (LD_PRELOAD unset?)\n", argv[1]);
		return 77;
	}
	libc_dup = (int (*)(int))dlsym(libc, "dup");
	signal(SIGPIPE, SIG_IGN);

	/* K: a non-blocking UDP socket on loopback, connected to itself */
	SIN.sin_family = AF_INET;
	SIN.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	K = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (K < 0 || bind(K, SA(&SIN), sizeof(SIN)) < 0 ||
	    getsockname(K, SA(&KADDR), &kl) < 0 || connect(K, SA(&KADDR), sizeof(KADDR)) < 0) {
		perror("kernel socket");
		return 1;
	}
	EP = epoll_create1(0);
	if (EP < 0 || epoll_ctl(EP, EPOLL_CTL_ADD, K, EV()) < 0) {
		perror("epoll");
		return 1;
	}
	F = mkstemp(tmpl);
	if (F < 0 || write(F, "data", 4) != 4) {
		perror("file");
		return 1;
	}
	unlink(tmpl);

#define DPSOCK_HOOK(ret, name, params, flags, badargs, kernargs) \
	do { \
		typedef ret (*fn_t) params; \
		fn_t shim = (fn_t)dlsym(RTLD_DEFAULT, #name); \
		fn_t real = (fn_t)dlsym(libc, #name); \
		fn_t mine = (fn_t)dlsym(so, #name); \
		Dl_info di; \
		long r1, r2; \
		int e1, e2; \
		nhooks++; \
		checks++; \
		if (mine == NULL || shim != mine || real == NULL || real == mine || \
		    dladdr((void *)shim, &di) == 0 || strstr(di.dli_fname, "dpsock_preload") == NULL) { \
			failures++; \
			printf("FAIL %-16s not exported by the shim (or not in libc)\n", #name); \
			break; \
		} \
		if ((flags) & DPSOCK_HT_SKIP) \
			break; \
		for (int b = 0; b < 2; b++) { \
			BAD = bads[b]; \
			errno = 0; \
			r1 = (long)real badargs; \
			e1 = errno; \
			errno = 0; \
			r2 = (long)shim badargs; \
			e2 = errno; \
			compare(#name, b ? "closed" : "-1", flags, r1, e1, r2, e2); \
		} \
		drain(); \
		errno = 0; \
		r1 = (long)real kernargs; \
		e1 = errno; \
		errno = 0; \
		r2 = (long)shim kernargs; \
		e2 = errno; \
		compare(#name, "kernel", flags, r1, e1, r2, e2); \
		drain(); \
	} while (0);
#include "hooks.def"
#undef DPSOCK_HOOK

	/* fork through the shim: the child runs and exits, the parent reaps it */
	pid = fork();
	if (pid == 0)
		_exit(42);
	checks++;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 42) {
		failures++;
		printf("FAIL fork through the shim\n");
	}
	printf("%d hooks, %d checks, %d failures\n", nhooks, checks, failures);
	return failures ? 1 : 0;
}
