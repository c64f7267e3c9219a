/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the harnesses assert about the code under test. A broken promise is
 * a finding like a crash: the message, then abort(), which libFuzzer reports
 * with the input that caused it.
 */
#ifndef DPSOCK_FUZZ_CHECK_H
#define DPSOCK_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, ...)                                                   \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ",       \
				__FILE__, __LINE__, #cond);                     \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			abort();                                                \
		}                                                               \
	} while (0)

/* Built with AddressSanitizer (the suite), or without (coverage.py)? */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif

#endif /* DPSOCK_FUZZ_CHECK_H */
