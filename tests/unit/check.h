/* Minimal assertions for the unit tests: count, report, keep going. */
#ifndef PYD_TEST_CHECK_H
#define PYD_TEST_CHECK_H

#include <stdio.h>

static int check_failures, check_count;

#define CHECK_EQ(got, want)                                                   \
	do {                                                                  \
		long long g_ = (long long)(got), w_ = (long long)(want);      \
		check_count++;                                                \
		if (g_ != w_) {                                               \
			check_failures++;                                     \
			fprintf(stderr, "%s:%d: %s = %lld, want %lld\n",      \
				__FILE__, __LINE__, #got, g_, w_);            \
		}                                                             \
	} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures != 0;
}

#endif
