/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log_priv.h"

#define DPSOCK_LOGTYPE_DEF(m) int dpsock_logtype_##m = -1;
DPSOCK_LOG_MODULES(DPSOCK_LOGTYPE_DEF)
#undef DPSOCK_LOGTYPE_DEF

int
dpsock_log_init(uint32_t level)
{
#define DPSOCK_LOGTYPE_REG(m)                                                   \
	if (dpsock_logtype_##m < 0)                                             \
		dpsock_logtype_##m = rte_log_register_type_and_pick_level("dpsock." #m, \
									  RTE_LOG_INFO); \
	if (dpsock_logtype_##m >= 0)                                            \
		rte_log_set_level(dpsock_logtype_##m, level);
	DPSOCK_LOG_MODULES(DPSOCK_LOGTYPE_REG)
#undef DPSOCK_LOGTYPE_REG
	return 0;
}

int
dpsock_log_set_module_level(const char *module, uint32_t level)
{
#define DPSOCK_LOGTYPE_SET(m)                                                   \
	if (strcmp(module, #m) == 0) {                                          \
		rte_log_set_level(dpsock_logtype_##m, level);                   \
		return 0;                                                       \
	}
	DPSOCK_LOG_MODULES(DPSOCK_LOGTYPE_SET)
#undef DPSOCK_LOGTYPE_SET
	return -ENOENT;
}
