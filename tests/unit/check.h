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

/* A struct pyd_frame of a made-up stack: the rest of its fields zero. */
#define FRAME(fn, qn, fl, ln, first)                                          \
	{                                                                     \
		.function = (fn), .qualname = (qn), .file = (fl),             \
		.line = (ln), .firstline = (first)                            \
	}

/* Write len bytes to dir/name (dir NULL: name is the path), checked. */
static inline void check_save(const char *dir, const char *name,
			      const void *data, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s%s%s", dir ? dir : "", dir ? "/" : "",
		 name);
	FILE *f = fopen(path, "wb");
	CHECK_EQ(f != NULL, 1);
	if (!f)
		return;
	CHECK_EQ(fwrite(data, 1, len, f), len);
	CHECK_EQ(fclose(f), 0);
}

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures != 0;
}

#endif
