/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * signal.c — blocking calls that honour signal handlers as Linux does.
 *
 * A wait that spins (DPSOCK_RX_POLL, DPSOCK_SELECT_POLL) makes no system
 * call, so the kernel cannot interrupt it: a handler runs, and the program
 * keeps waiting for what the handler meant to stop. The shim therefore
 * installs the program's handlers behind a trampoline that counts, per
 * thread, the handlers that ran; a wait that sees the count move stops as
 * the kernel's call would:
 *
 *   poll, ppoll, select, pselect, epoll_wait, epoll_pwait   EINTR, always
 *   accept, connect, recv*, send* (and read/write on them)  restarted when
 *                    the handler has SA_RESTART and the socket no
 *                    SO_RCVTIMEO/SO_SNDTIMEO for that direction; else
 *                    EINTR (or the bytes moved so far)
 *
 * (signal(7), "Interruption of system calls and library functions by
 * signal handlers"). A wait asleep in the kernel gets EINTR from it and
 * decides the same way. sigaction() and signal() report the program's own
 * handler and flags back, never the trampoline.
 */
#include <string.h>

#include "shim.h"

#define HOOK DPSOCK_SHIM_EXPORT

/* The program's disposition of each signal that has a handler. Written by
 * sigaction (any thread), read by the trampoline (any thread, in signal
 * context): each field is loaded and stored atomically. */
static struct {
	void (*fn)(void);   /* the handler: sa_handler or sa_sigaction */
	int flags;          /* the program's sa_flags */
} app[_NSIG];

/* Handlers run by this thread (the trampoline bumps it), and the last
 * signal one ran for. Initial-exec TLS: safe in a signal handler. */
static __thread unsigned int sig_count __attribute__((tls_model("initial-exec")));
static __thread int sig_last __attribute__((tls_model("initial-exec")));

unsigned int
shim_sig_count(void)
{
	return __atomic_load_n(&sig_count, __ATOMIC_RELAXED);
}

bool
shim_sig_restarts(void)
{
	int s = __atomic_load_n(&sig_last, __ATOMIC_RELAXED);

	return s > 0 && s < _NSIG && (__atomic_load_n(&app[s].flags, __ATOMIC_RELAXED) & SA_RESTART);
}

static void
trampoline(int sig, siginfo_t *info, void *ctx)
{
	void (*fn)(void) = __atomic_load_n(&app[sig].fn, __ATOMIC_RELAXED);
	int flags = __atomic_load_n(&app[sig].flags, __ATOMIC_RELAXED);

	__atomic_store_n(&sig_last, sig, __ATOMIC_RELAXED);
	__atomic_store_n(&sig_count, sig_count + 1, __ATOMIC_RELAXED);
	if (flags & SA_RESETHAND)   /* the kernel reset it to SIG_DFL */
		__atomic_store_n(&app[sig].fn, NULL, __ATOMIC_RELAXED);
	if (fn == NULL)
		return;
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))fn)(sig, info, ctx);
	else
		((void (*)(int))fn)(sig);
}

static bool
is_handler(const struct sigaction *a)
{
	return !(a->sa_flags & SA_SIGINFO) ? a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN
					   : a->sa_sigaction != NULL;
}

/* The kernel's old disposition as the program set it. */
static void
report_old(int sig, struct sigaction *old, void (*fn)(void), int flags)
{
	if (old->sa_sigaction != trampoline)
		return;
	old->sa_flags = flags;
	if (flags & SA_SIGINFO)
		old->sa_sigaction = (void (*)(int, siginfo_t *, void *))fn;
	else
		old->sa_handler = fn != NULL ? (void (*)(int))fn : SIG_DFL;
	(void)sig;
}

HOOK int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction k, o;
	void (*fn)(void) = NULL, (*ofn)(void);
	int flags = 0, oflags, r;

	if (sig <= 0 || sig >= _NSIG || act == NULL || !is_handler(act)) {
		/* a query, SIG_DFL / SIG_IGN, or a bad signal: the kernel's
		 * call; a handler we held is forgotten once replaced */
		ofn = sig > 0 && sig < _NSIG ? __atomic_load_n(&app[sig].fn, __ATOMIC_RELAXED) : NULL;
		oflags = sig > 0 && sig < _NSIG ? __atomic_load_n(&app[sig].flags, __ATOMIC_RELAXED) : 0;
		r = REAL(sigaction)(sig, act, old != NULL ? &o : NULL);
		if (r == 0 && act != NULL)
			__atomic_store_n(&app[sig].fn, NULL, __ATOMIC_RELAXED);
		if (r == 0 && old != NULL) {
			report_old(sig, &o, ofn, oflags);
			*old = o;
		}
		return r;
	}
	fn = (act->sa_flags & SA_SIGINFO) ? (void (*)(void))act->sa_sigaction
					  : (void (*)(void))act->sa_handler;
	flags = act->sa_flags;
	k = *act;
	k.sa_sigaction = trampoline;
	k.sa_flags |= SA_SIGINFO;
	ofn = __atomic_exchange_n(&app[sig].fn, fn, __ATOMIC_RELAXED);
	oflags = __atomic_exchange_n(&app[sig].flags, flags, __ATOMIC_RELAXED);
	r = REAL(sigaction)(sig, &k, old != NULL ? &o : NULL);
	if (r < 0) {
		int e = errno;

		__atomic_store_n(&app[sig].fn, ofn, __ATOMIC_RELAXED);
		__atomic_store_n(&app[sig].flags, oflags, __ATOMIC_RELAXED);
		errno = e;
		return r;
	}
	if (old != NULL) {
		report_old(sig, &o, ofn, oflags);
		*old = o;
	}
	return 0;
}

/* glibc's signal(): BSD semantics (SA_RESTART, the handler stays). Its
 * internal sigaction call would not reach the hook above. */
HOOK sighandler_t
signal(int sig, sighandler_t handler)
{
	struct sigaction a = { .sa_handler = handler, .sa_flags = SA_RESTART }, o;

	sigemptyset(&a.sa_mask);
	if (sig > 0 && sig < _NSIG)
		sigaddset(&a.sa_mask, sig);
	if (sigaction(sig, &a, &o) < 0)
		return SIG_ERR;
	return o.sa_handler;
}
