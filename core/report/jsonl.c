/*
 * -f jsonl: one JSON object a line for each sample as it is taken, for
 * other tools to read as a stream (docs/profile-formats.md):
 * {"t": seconds after the start, "pid", "tid", "thread", "frames":
 * [{"function", "file", "line"}, ...] innermost first}.
 */
#include "stream.h"

static void frame(struct pyd_buf *b, const struct pyd_prof_frame *f)
{
	pyd_buf_put(b, "{\"function\": ", 13);
	pyd_buf_json_str(b, f->qualname ? f->qualname : f->function);
	pyd_buf_put(b, ", \"file\": ", 10);
	pyd_buf_json_str(b, f->file);
	if (f->kind == PYD_PF_PYTHON)
		pyd_buf_printf(b, ", \"line\": %d}", f->line);
	else
		pyd_buf_put(b, ", \"line\": null}", 15);
}

static void jsonl_sample(struct pyd_buf *b, const struct pyd_profile *p,
                         const struct pyd_prof_sample *x, void *st)
{
	(void)st;
	const struct pyd_prof_thread *t = &p->threads[x->thread];
	pyd_buf_printf(b, "{\"t\": %.6f, \"pid\": %d, \"tid\": %lld, "
	                  "\"thread\": ",
	               (double)p->meta.round_us / 1e6,
	               p->processes[t->process].pid, (long long)t->tid);
	pyd_buf_json_str(b, t->name);
	if (pyd_sample_mode(p->meta.mode)->unit)
		pyd_buf_printf(b, ", \"awaiting\": %s",
		               x->awaiting ? "true" : "false");
	pyd_buf_put(b, ", \"frames\": [", 13);
	for (size_t i = x->n; i-- > 0;) {
		frame(b, &p->frames[x->frames[i]]);
		if (i)
			pyd_buf_put(b, ", ", 2);
	}
	pyd_buf_put(b, "]}\n", 3);
}

/* Lines go out a tenth of a second after they are taken at the latest:
 * soon enough for a tool that follows the stream. */
const struct pyd_stream_writer pyd_stream_jsonl = {
    .flush_us = 100000,
    .sample = jsonl_sample,
};
