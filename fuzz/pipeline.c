/*
 * The fuzz harnesses' shared pipeline (pipeline.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../core/buf.h"
#include "../core/report/report.h"
#include "../frontend/explain.h"
#include "pipeline.h"

const char *fuzz_file(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof path, "/tmp/pyd-fuzz-%d.bin", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	return path;
}

void fuzz_pipeline(const struct pyd_memsrc *src, const struct pyd_runtime *rt)
{
	struct pyd_session *s = NULL;
	char detail[256];
	if (pyd_session_open(src, rt, &s, detail, sizeof detail)) {
		pyd_session_close(s);
		return;
	}
	struct pyd_report_opts o = {
	    .pid = 1,
	    .origin = "fuzz",
	    .source_kind = "snapshot",
	    .python_version = pyd_session_version(s),
	    .binary = pyd_session_binary(s),
	};
	struct pyd_buf b = {0};
	struct pyd_dump d = {0};
	struct pyd_greenlet_set gs = {0};
	bool greenlets = !pyd_err_fatal(pyd_dump_greenlets(s, &gs)) &&
	                 !pyd_err_fatal(pyd_greenlets_waiting(s, &gs));
	if (!pyd_err_fatal(pyd_dump_stacks(s, &d))) {
		const struct pyd_repr_limits lim = PYD_REPR_DEFAULTS;
		pyd_dump_locals(s, &d, &gs, &lim);
		pyd_report_text(&b, &d, &o);
		pyd_report_json(&b, &d, &o);
	}
	if (greenlets) {
		pyd_report_greenlets_text(&b, &gs, &o);
		pyd_report_greenlets_json(&b, &gs, &o);
	}
	pyd_greenlet_set_free(&gs);
	pyd_dump_free(&d);
	struct pyd_task_graph g = {0};
	if (pyd_tasks_supported(s) && !pyd_err_fatal(pyd_dump_tasks(s, &g))) {
		pyd_report_tasks_tree(&b, &g, &o);
		pyd_report_tasks_table(&b, &g, &o);
		pyd_report_tasks_json(&b, &g, &o);
	}
	pyd_task_graph_free(&g);
	pyd_buf_free(&b);
	pyd_session_close(s);
}
