/* SPDX-License-Identifier: BSD-3-Clause */
/* Configure-time probe (meson.build): can clang link a libFuzzer target
 * with ASan and UBSan here? */
#include <stddef.h>
#include <stdint.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}
