/*
 * py-sample in gdb.  gdb cannot be told to resume from inside an unwind
 * callback, and it cannot read a process it lets run, so the sampling is
 * pystack-dump's own, in the background: the reader checks the request
 * and writes a shell script (BASE.sh); the command file starts it and
 * runs `continue`; the script waits until the inferior runs, samples it,
 * then interrupts gdb (SIGINT, which gdb keeps from the inferior) and
 * leaves what to print in BASE.txt.  gdb stays single-threaded and in
 * charge of the inferior throughout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "decode/session.h"
#include "../frontend/explain.h"
#include "plugin.h"

/* The shell script, after its variables: wait for the inferior to run,
 * sample, stop it (an interrupted gdb stops it; a second SIGINT only if
 * the first was lost), then the report or the error. */
static const char script_body[] =
    "running() { read -r s < /proc/$pid/stat || return 1; "
    "s=${s##*) }; [ \"${s%% *}\" != t ]; }\n"
    "i=0; while ! running && [ $i -lt 500 ]; do sleep 0.01; "
    "i=$((i+1)); done\n"
    "\"$@\" >\"$b.log\" 2>&1; rc=$?\n"
    "i=0; while running && [ $i -lt 100 ]; do "
    "[ $((i % 20)) -eq 0 ] && kill -INT $gdb; sleep 0.05; "
    "i=$((i+1)); done\n"
    "{ if [ $rc -eq 0 ]; then show; "
    "else sed 's/^/py-sample: /' \"$b.log\"; fi; } >\"$b.txt.tmp\"\n"
    "rm -f \"$b.log\"; mv \"$b.txt.tmp\" \"$b.txt\"\n";

/* s in single quotes, for the shell. */
static void quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* Can this target be sampled?  If not, say why. */
static bool can_sample(const struct gdb_src *g, struct pyd_buf *out)
{
	enum pyd_say why;
	if (g->req->kind == GDB_TARGET_CORE)
		why = PYD_SAY_SAMPLE_ON_CORE;
	else if (g->req->kind == GDB_TARGET_REMOTE)
		why = PYD_SAY_SAMPLE_REMOTE;
	else if (!g->live)
		why = PYD_SAY_SAMPLE_NO_PROC;
	else if (!g->req->cli)
		why = PYD_SAY_SAMPLE_NO_CLI;
	else
		return true;
	pyd_explain_debugger_say(out, "py-sample", why, NULL, NULL);
	return false;
}

/* Is it a CPython we can decode?  Better said now than after resuming. */
static bool check_python(struct gdb_src *g, struct pyd_buf *out)
{
	struct pyd_session *s;
	struct pyd_cmd_target t = {.src = &g->src};
	enum pyd_err err = pyd_cmd_open("py-sample", &t, &s, out);
	pyd_session_close(s);
	return !err;
}

/* What the script shows once the sampler succeeded. */
static void write_show(FILE *f, const struct pyd_cmd *c, const char *out)
{
	fputs("show() { ", f);
	if (c->opt.output) {
		fputs("echo \"py-sample: profile written to \"", f);
		quoted(f, c->opt.output);
	} else {
		fputs("cat ", f);
		quoted(f, out);
		fputs("; rm -f ", f);
		quoted(f, out);
	}
	fputs("; }\n", f);
}

static void write_command(FILE *f, const struct gdb_src *g,
                          const struct pyd_cmd *c, const char *out)
{
	fprintf(f, "set -- ");
	quoted(f, g->req->cli);
	fprintf(f, " sample -q -n %llu -m ",
	        (unsigned long long)c->opt.samples);
	quoted(f, pyd_sample_mode_name(c->opt.mode));
	if (c->opt.rate > 0)
		fprintf(f, " -r %.17g", c->opt.rate);
	else
		fputs(" -r max", f);
	if (c->opt.format || !c->opt.output) {
		fputs(" -f ", f);
		quoted(f, c->opt.format ? c->opt.format->name : "table");
	}
	fputs(" -o ", f);
	quoted(f, out);
	fprintf(f, " %d\n", g->req->pid);
}

static bool write_script(const char *path, const struct gdb_src *g,
                         const struct pyd_cmd *c, const char *base)
{
	char table[4200];
	snprintf(table, sizeof table, "%s.table", base);
	const char *out = c->opt.output ? c->opt.output : table;
	FILE *f = fopen(path, "we");
	if (!f)
		return false;
	fprintf(f, "gdb=%d pid=%d b=", (int)getpid(), g->req->pid);
	quoted(f, base);
	fputc('\n', f);
	write_show(f, c, out);
	write_command(f, g, c, out);
	/* sh has the script open: it may go now. */
	fputs("rm -f \"$b.sh\"\n", f);
	fputs(script_body, f);
	return fclose(f) == 0;
}

void gdb_sample_start(struct gdb_src *g, const struct pyd_cmd *c,
                      const char *base, struct pyd_buf *out)
{
	char path[4200];
	if (!can_sample(g, out) || !check_python(g, out))
		return;
	snprintf(path, sizeof path, "%s.sh", base);
	if (!write_script(path, g, c, base))
		pyd_explain_debugger_say(out, "py-sample", PYD_SAY_CANNOT_WRITE,
		                         path, strerror(errno));
}
