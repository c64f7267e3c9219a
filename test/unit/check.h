/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h — the unit tests' assertion: CHECK(cond, fmt, ...) counts the
 * check, and when cond is false prints file:line, the condition and the
 * message to stderr and counts a failure; the test goes on, and main()
 * returns 1 when `failures` is not 0. One test program per file includes it.
 */
#ifndef DPSOCK_TEST_CHECK_H
#define DPSOCK_TEST_CHECK_H

#include <stdio.h>

static int failures;
static unsigned int checks;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		checks++;                                                       \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__,   \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			failures++;                                             \
		}                                                               \
	} while (0)

#endif /* DPSOCK_TEST_CHECK_H */
