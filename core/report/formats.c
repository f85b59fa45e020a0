/*
 * The table of profile formats: adding a format is a writer and a row
 * here (a streamed one's writer is a struct pyd_stream_writer) (and its
 * check in tests/test_sample_formats.py); -f, -o suffix
 * detection, the help of pystack-dump sample and py-sample, and the tests
 * (pystack-dump sample --list-formats: names and suffixes) all read it.
 */
#include <stdio.h>
#include <string.h>

#include "stream.h"

const struct pyd_prof_format pyd_prof_formats[] = {
	{"table", {NULL},
	 "functions by direct and cumulative\nsamples (default on a terminal)",
	 false, pyd_report_prof_table, NULL, NULL},
	{"collapsed", {NULL},
	 "flamegraph.pl/inferno/speedscope\ninput (default otherwise)", false,
	 pyd_report_prof_collapsed, NULL, NULL},
	{"flamegraph", {".html", ".htm"}, "one interactive HTML page", false,
	 pyd_report_prof_flamegraph, NULL, NULL},
	{"speedscope", {".speedscope.json"}, "speedscope.app JSON", true,
	 pyd_report_prof_speedscope, NULL, NULL},
	{"gecko", {".gecko.json"}, "Firefox Profiler JSON", true,
	 pyd_report_prof_gecko, NULL, NULL},
	{"pprof", {".pb.gz", ".pprof"},
	 "gzipped profile.proto (pprof, go\ntool pprof)", true,
	 pyd_report_prof_pprof, NULL, NULL},
	{"pstats", {".pstats", ".prof"},
	 "Python's pstats/cProfile file\n(python -m pstats, snakeviz)", false,
	 pyd_report_prof_pstats, NULL, NULL},
	{"json", {".json"}, "the call tree (docs/profile-formats.md)", false,
	 pyd_report_prof_json, NULL, NULL},
	{"heatmap", {".heat.html"},
	 "source files with samples per line,\none HTML page", false, NULL,
	 pyd_report_prof_heatmap, NULL},
	{"raw", {".pydrec"},
	 "every sample as taken, with zstd\n(pystack-dump report)",
	 false, NULL, NULL, &pyd_stream_raw},
	{"jsonl", {".jsonl"}, "a JSON line per sample, as taken",
	 false, NULL, NULL, &pyd_stream_jsonl},
	{NULL, {NULL}, NULL, false, NULL, NULL, NULL},
};

const struct pyd_prof_format *pyd_prof_format_named(const char *name)
{
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++)
		if (!strcmp(name, f->name))
			return f;
	return NULL;
}

static size_t suffix_match(const char *path, const char *suffix)
{
	size_t n = strlen(path), m = strlen(suffix);
	return n >= m && !strcmp(path + n - m, suffix) ? m : 0;
}

const struct pyd_prof_format *pyd_prof_format_for_file(const char *path)
{
	const struct pyd_prof_format *best = pyd_prof_format_named("collapsed");
	size_t best_len = 0;
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++)
		for (size_t i = 0; i < 3 && f->suffixes[i]; i++) {
			size_t m = suffix_match(path, f->suffixes[i]);
			if (m > best_len) {
				best = f;
				best_len = m;
			}
		}
	return best;
}

void pyd_prof_format_list(char *out, size_t size)
{
	size_t len = 0;
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++) {
		int n = snprintf(out + len, size - len, "%s%s",
		                 f == pyd_prof_formats ? "" : ", ", f->name);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
}

enum pyd_err pyd_report_prof(struct pyd_buf *b, const struct pyd_profile *p,
			     const struct pyd_prof_format *f,
			     const struct pyd_prof_opts *o)
{
	if (!f->write && !f->write_opts)
		return PYD_E_USAGE;
	bool merge = !o->per_thread && !f->per_thread;
	struct pyd_profile *view =
	    merge || o->active ? pyd_profile_view(p, PYD_PROF_NONE, o->active, merge)
	                       : NULL;
	if ((merge || o->active) && !view)
		return PYD_E_NOMEM;
	if (f->write_opts)
		f->write_opts(b, view ? view : p, o);
	else
		f->write(b, view ? view : p, o->limit);
	pyd_profile_free(view);
	return b->failed ? PYD_E_NOMEM : PYD_OK;
}
