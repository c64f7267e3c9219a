/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.c — the real libc functions (resolved once from hooks.def), the
 * DPSOCK_* environment (read once, at first use), and the shim's logger.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"

/* Each exported hook, redeclared from the table with default visibility:
 * the compiler checks the prototype against glibc's own declaration. */
#define DPSOCK_HOOK(ret, name, params, flags, bad, kern) DPSOCK_SHIM_EXPORT ret name params;
#include "hooks.def"
#undef DPSOCK_HOOK

struct shim_real shim_real;
int shim_real_ready;
/* shim_getpid's and shim_gettid's caches; a fork's child forgets both
 * (fork.c) */
pid_t shim_pid_cache;
__thread pid_t shim_tid_cache;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void
real_resolve_once(void)
{
#define DPSOCK_HOOK(ret, name, params, flags, bad, kern) \
	shim_real.name = (shim_real_##name##_t)dlsym(RTLD_NEXT, #name);
#include "hooks.def"
#undef DPSOCK_HOOK
	/* release: publishes the pointers above to REAL()'s acquire load. */
	__atomic_store_n(&shim_real_ready, 1, __ATOMIC_RELEASE);
}

void
shim_real_resolve(void)
{
	pthread_once(&real_once, real_resolve_once);
}

/* ---- environment ------------------------------------------------------- */

struct shim_env shim_env = {
	.name = "dpsock",
	.runtime_dir = "/run/dpsock",
	.rx_poll_us = SHIM_POLL_AUTO,
	.select_poll_us = SHIM_POLL_AUTO,
	.offload = 1,
	.rx_prefetch = 256,
	.log_level = DPSOCK_LOG_NOTICE,
	.log_fd = 2,
};

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

enum env_type { ENV_STR, ENV_LONG, ENV_INT, ENV_LEVEL, ENV_FILE };

/* One table: variable, type, where, default shown in the log. */
static const struct env_var {
	const char *var;
	enum env_type type;
	size_t off;
	size_t size;
} env_vars[] = {
	{ "DPSOCK_NAME", ENV_STR, offsetof(struct shim_env, name), sizeof(shim_env.name) },
	{ "DPSOCK_RUNTIME_DIR", ENV_STR, offsetof(struct shim_env, runtime_dir),
	  sizeof(shim_env.runtime_dir) },
	{ "DPSOCK_APPLICATION_ID", ENV_STR, offsetof(struct shim_env, app_id),
	  sizeof(shim_env.app_id) },
	{ "DPSOCK_RULES_FILE", ENV_STR, offsetof(struct shim_env, rules_file),
	  sizeof(shim_env.rules_file) },
	{ "DPSOCK_RX_POLL", ENV_LONG, offsetof(struct shim_env, rx_poll_us), 0 },
	{ "DPSOCK_SELECT_POLL", ENV_LONG, offsetof(struct shim_env, select_poll_us), 0 },
	{ "DPSOCK_OFFLOAD", ENV_INT, offsetof(struct shim_env, offload), 0 },
	{ "DPSOCK_LOOPBACK", ENV_INT, offsetof(struct shim_env, loopback), 0 },
	{ "DPSOCK_RX_PREFETCH_BYTES", ENV_INT, offsetof(struct shim_env, rx_prefetch), 0 },
	{ "DPSOCK_LOG_LEVEL", ENV_LEVEL, offsetof(struct shim_env, log_level), 0 },
	{ "DPSOCK_LOG_FILE", ENV_FILE, offsetof(struct shim_env, log_fd), 0 },
};

static const char *const level_names[] = {
	[DPSOCK_LOG_ERR] = "err", [DPSOCK_LOG_WARNING] = "warning",
	[DPSOCK_LOG_NOTICE] = "notice", [DPSOCK_LOG_INFO] = "info",
	[DPSOCK_LOG_DEBUG] = "debug",
};

static int
parse_level(const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (*v != '\0' && *end == '\0')
		return n < 0 ? 0 : n > DPSOCK_LOG_DEBUG ? DPSOCK_LOG_DEBUG : (int)n;
	for (int i = DPSOCK_LOG_ERR; i <= DPSOCK_LOG_DEBUG; i++)
		if (strcasecmp(v, level_names[i]) == 0)
			return i;
	return -1;
}

static int
open_log_file(const char *pattern)
{
	char path[512];
	size_t o = 0;

	for (const char *p = pattern; *p != '\0' && o + 16 < sizeof(path); p++) {
		if (p[0] == '%' && p[1] == 'd') {
			o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)shim_getpid());
			p++;
		} else {
			path[o++] = *p;
		}
	}
	path[o] = '\0';
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void
env_load_once(void)
{
	const char *prog = program_invocation_short_name;

	snprintf(shim_env.prog, sizeof(shim_env.prog), "%s", prog ? prog : "");
	snprintf(shim_env.app_id, sizeof(shim_env.app_id), "%s", shim_env.prog);
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
		const struct env_var *e = &env_vars[i];
		const char *v = getenv(e->var);
		char *dst = (char *)&shim_env + e->off;
		char *end;
		long n;
		int fd;

		if (v == NULL)
			continue;
		switch (e->type) {
		case ENV_STR:
			snprintf(dst, e->size, "%s", v);
			break;
		case ENV_LONG:
		case ENV_INT:
			n = strtol(v, &end, 10);
			if (*v == '\0' || *end != '\0' || n < -1) {
				shim_log(DPSOCK_LOG_WARNING, "%s='%s' is not a number >= -1: ignored",
					   e->var, v);
				continue;
			}
			if (e->type == ENV_LONG)
				*(long *)(void *)dst = n;
			else
				*(int *)(void *)dst = (int)n;
			break;
		case ENV_LEVEL:
			n = parse_level(v);
			if (n < 0) {
				shim_log(DPSOCK_LOG_WARNING, "%s='%s': not a level (err..debug, 3..7)",
					   e->var, v);
				continue;
			}
			shim_env.log_level = (int)n;
			break;
		case ENV_FILE:
			fd = open_log_file(v);
			if (fd < 0) {
				shim_log(DPSOCK_LOG_WARNING, "%s='%s': cannot open (%s); logging to stderr",
					   e->var, v, strerror(errno));
				continue;
			}
			shim_env.log_fd = fd;
			break;
		}
	}
	/* As VMA does: one line per non-default setting, at notice level. */
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
		const char *v = getenv(env_vars[i].var);

		if (v != NULL && DPSOCK_LOG_NOTICE <= shim_env.log_level)
			shim_log(DPSOCK_LOG_NOTICE, "%-24s %s", env_vars[i].var, v);
	}
}

void
shim_env_load(void)
{
	int saved = errno;

	pthread_once(&env_once, env_load_once);
	errno = saved;
}

void
shim_log(int level, const char *fmt, ...)
{
	char buf[512];
	int n;
	va_list ap;
	int saved = errno;

	if (level < DPSOCK_LOG_ERR)
		level = DPSOCK_LOG_ERR;
	if (level > DPSOCK_LOG_DEBUG)
		level = DPSOCK_LOG_DEBUG;
	n = snprintf(buf, sizeof(buf), "dpsock.shim %s[%d]: %s: ",
		     shim_env.prog[0] ? shim_env.prog : program_invocation_short_name,
		     (int)shim_getpid(), level_names[level]);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* the real write: our own hook would look the fd up for nothing */
	if (REAL(write)(shim_env.log_fd, buf, (size_t)n) < 0) {
		/* nowhere else to say it */
	}
	errno = saved;
}

uint64_t
shim_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
