/*
 * libFuzzer: a saved profile read back as `pystack-dump diff` and
 * `report` read what people hand them -- pystack-dump's JSON tree,
 * collapsed stacks, a raw recording (zstd) -- then written in every
 * format, and diffed against itself.
 */
#include <stdlib.h>

#include "../core/report/profiles.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyd_profile *p = NULL;
	char detail[256];
	if (pyd_profile_read((const char *)data, size, &p, detail,
			     sizeof detail))
		return 0;
	struct pyd_buf b = {0};
	struct pyd_prof_opts o = {0};
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++)
		pyd_report_prof(&b, p, f, &o);
	for (const char *const *d = pyd_diff_formats; *d; d++)
		pyd_report_diff(&b, p, p, *d, 10);
	pyd_buf_free(&b);
	pyd_profile_free(p);
	return 0;
}
