/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging through DPDK's log system, one named type per module
 * ("dpsock.main", "dpsock.pmd", ...). DPSOCK_LOG_DP is the data-path variant,
 * compiled out below RTE_LOG_DP_LEVEL.
 */
#ifndef DPSOCK_LOG_PRIV_H
#define DPSOCK_LOG_PRIV_H

#include <rte_log.h>

/* X(module): every log module; the names users give in log.modules. */
#define DPSOCK_LOG_MODULES(X) \
	X(main)               \
	X(pmd)                \
	X(worker)             \
	X(lwip)               \
	X(stats)              \
	X(tcp)                \
	X(preload)

#define DPSOCK_LOGTYPE_DECL(m) extern int dpsock_logtype_##m;
DPSOCK_LOG_MODULES(DPSOCK_LOGTYPE_DECL)
#undef DPSOCK_LOGTYPE_DECL

#define DPSOCK_LOG(level, module, fmt, ...)                                     \
	rte_log(RTE_LOG_##level, dpsock_logtype_##module,                       \
		"dpsock." #module ": " fmt "\n", ##__VA_ARGS__)

#define DPSOCK_LOG_DP(level, module, fmt, ...)                                  \
	RTE_LOG_DP(level, USER1, "dpsock." #module ": " fmt "\n", ##__VA_ARGS__)

/*
 * Register the log types (idempotent) and apply a default level to all of
 * them. Returns 0.
 */
int dpsock_log_init(uint32_t level);

/*
 * Set one module's level. Returns 0, or -ENOENT when no module has that
 * name (the caller reports the known names from DPSOCK_LOG_MODULES).
 */
int dpsock_log_set_module_level(const char *module, uint32_t level);

#endif /* DPSOCK_LOG_PRIV_H */
