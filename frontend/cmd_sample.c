/*
 * py-sample in a debugger that samples in its own process (lldb).  The
 * plugin brings a memory source that reads the running process without
 * the debugger (a debugger cannot read a process it lets run) and the two
 * calls that resume and stop the inferior; the rest is here.  gdb cannot
 * resume its inferior from inside the reader, so its py-sample runs
 * pystack-dump sample from a script instead (gdb-plugin/sample.c): both
 * take the options of one table and sample with core's one sampler.
 */
#include <stdio.h>
#include <string.h>

#include "../core/profile/sampler.h"
#include "../core/report/profiles.h"
#include "commands.h"
#include "explain.h"

/* --format, else (with -o) the file's name, else the table. */
static const struct pyd_prof_format *pick_format(const struct pyd_cmd *c)
{
	if (c->opt.format)
		return c->opt.format;
	return c->opt.output ? pyd_prof_format_for_file(c->opt.output)
	                     : pyd_prof_format_named("table");
}

static bool interrupted(void *ctx)
{
	const struct pyd_cmd_resume *r = ctx;
	return r->interrupted && r->interrupted(r->ctx);
}

/*
 * N rounds at the rate asked, but never past N / rate plus half a second:
 * the user is waiting at a debugger prompt with the inferior running, so
 * a slow target must not stretch the run.
 */
static const char *sample_loop(const struct pyd_cmd *c,
                               const struct pyd_cmd_resume *r,
                               struct pyd_sampler *sp, struct pyd_prof_meta *m)
{
	const struct pyd_opts *o = &c->opt;
	struct pyd_sample_loop l = {
	    .rate = o->rate,
	    .max_rounds = o->samples,
	    .max_seconds = o->rate > 0 ? (double)o->samples / o->rate + 0.5 : 0,
	    .stop = interrupted,
	    .ctx = (void *)r,
	};
	enum pyd_sample_end e = pyd_sample_loop(sp, &l, m);
	return e == PYD_END_ROUNDS ? "done"
	       : e == PYD_END_TIME ? "time budget reached"
	                           : pyd_sample_end_text(e);
}

static void summary(struct pyd_buf *msg, const struct pyd_prof_meta *m,
                    const char *why, const char *output,
                    const struct pyd_prof_format *f)
{
	pyd_buf_printf(msg,
	               "py-sample: %s after %.2f s: %llu samples in %llu "
	               "rounds, %llu errors, %llu missed ticks.\n",
	               why, m->duration_s, (unsigned long long)m->samples,
	               (unsigned long long)m->ticks,
	               (unsigned long long)m->errors,
	               (unsigned long long)m->missed);
	if (m->corrupt[0]) {
		struct pyd_explain e = {.prog = "py-sample",
		                        .shell = PYD_SHELL_DEBUGGER,
		                        .detail = m->corrupt};
		pyd_explain(msg, &e, PYD_SAY_SAMPLE_CORRUPT, PYD_E_READ);
	}
	if (output)
		pyd_buf_printf(msg, "py-sample: wrote %s (%s).\n", output,
		               f->name);
}

static enum pyd_err sample(const struct pyd_cmd *c,
                           const struct pyd_cmd_target *t,
                           const struct pyd_cmd_resume *r,
                           struct pyd_session *s, struct pyd_profile *prof,
                           struct pyd_buf *report, struct pyd_buf *msg,
                           const struct pyd_prof_format *f)
{
	struct pyd_sampler *sp = NULL;
	uint32_t proc = pyd_profile_process(prof, t->pid, 0, NULL,
	                                    pyd_session_version(s));
	enum pyd_err err = proc == PYD_PROF_NONE
	                       ? PYD_E_NOMEM
	                       : pyd_sampler_open(s, c->opt.mode, prof, proc, &sp);
	if (err) {
		pyd_buf_printf(msg, "py-sample: cannot sample: %s.\n",
		               pyd_strerror(err));
		return err;
	}
	struct pyd_prof_meta *m = &prof->meta;
	m->pid = t->pid;
	m->python_version = pyd_session_version(s);
	m->mode = c->opt.mode;
	m->rate_hz = c->opt.rate;
	if ((err = r->resume(r->ctx))) {
		pyd_sampler_close(sp);
		pyd_buf_printf(msg, "py-sample: cannot resume the inferior.\n");
		return err;
	}
	const char *why = sample_loop(c, r, sp, m);
	enum pyd_err stop = r->stop(r->ctx);
	pyd_sampler_close(sp);
	if (stop)
		pyd_buf_printf(msg, "py-sample: the inferior did not stop "
		                    "again; interrupt it yourself.\n");
	pyd_profile_finish(prof);
	/* The debugger's source lines serve the heat map too. */
	struct pyd_prof_opts po = {.limit = 40,
	                           .source_line = t->source_line,
	                           .source_ctx = t->source_ctx};
	if (pyd_report_prof(report, prof, f, &po))
		return PYD_E_NOMEM;
	summary(msg, m, why, c->opt.output, f);
	return stop;
}

enum pyd_err pyd_cmd_sample(const struct pyd_cmd *c,
                            const struct pyd_cmd_target *t,
                            const struct pyd_cmd_resume *r,
                            struct pyd_buf *report, struct pyd_buf *msg)
{
	const struct pyd_prof_format *f = pick_format(c);
	/* Written as samples come, while the debugger waits for the
	 * command's one report: pystack-dump sample writes them. */
	if (f->stream) {
		pyd_buf_printf(msg, "py-sample: -f %s is written as samples are "
		                    "taken: run pystack-dump sample -f %s -o "
		                    "FILE PID.\n", f->name, f->name);
		return PYD_E_USAGE;
	}
	char detail[256] = "";
	struct pyd_session *s = NULL;
	enum pyd_err err =
	    pyd_session_open(t->src, t->rt, &s, detail, sizeof detail);
	if (err) {
		pyd_explain_debugger(msg, "py-sample", err, detail);
		return err;
	}
	struct pyd_profile *prof = pyd_profile_new(true, 0);
	if (prof)
		prof->gc = !c->opt.no_gc;
	err = prof ? sample(c, t, r, s, prof, report, msg, f) : PYD_E_NOMEM;
	if (err == PYD_E_NOMEM)
		pyd_buf_printf(msg, "py-sample: out of memory.\n");
	pyd_profile_free(prof);
	pyd_session_close(s);
	return err;
}
