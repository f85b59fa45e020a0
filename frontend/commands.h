/*
 * The debugger commands: py-bt, py-tasks and py-sample.
 *
 * The gdb and lldb plugins only bring a memory source (reads through the
 * debugger) and print what comes back: the arguments, their errors, the
 * decoding and the report are all here, so both debuggers say the same
 * thing, and say it as pystack-dump does.
 */
#ifndef PYD_FRONTEND_COMMANDS_H
#define PYD_FRONTEND_COMMANDS_H

#include "../core/pyd.h"
#include "../core/report/report.h"
#include "options.h"

enum pyd_cmd_kind {
	PYD_CMD_BT,     /* py-bt [all] [-n] [-l] */
	PYD_CMD_TASKS,  /* py-tasks [-t] [-j] */
	PYD_CMD_SAMPLE, /* py-sample N [--rate HZ] [--mode M] [-o FILE] ... */
	/* The selected Python frame (struct pyd_py_selection) and what it
	 * holds: */
	PYD_CMD_UP,     /* py-up [N] */
	PYD_CMD_DOWN,   /* py-down [N] */
	PYD_CMD_FRAME,  /* py-frame */
	PYD_CMD_LIST,   /* py-list */
	PYD_CMD_LOCALS, /* py-locals */
	PYD_CMD_PRINT,  /* py-print NAME */
};

/* The Python frame py-up and py-down select, which py-frame, py-list,
 * py-locals and py-print look at: the shell keeps it between commands.
 * A new thread, or a stack shorter than level, starts over at #0. */
struct pyd_py_selection {
	int64_t tid;  /* the thread it was selected on; 0: none yet */
	size_t level; /* 0: the innermost Python frame */
	/* Set by each of these commands: the native frame (innermost
	 * first, of pyd_cmd_target.native) that runs the selected one, for
	 * the shell to select too; -1 if none is known. */
	long native;
};

struct pyd_cmd {
	enum pyd_cmd_kind kind;
	/* py-bt: all, native, json; py-tasks: table, json; py-sample:
	 * samples, rate, mode, format, output.  Strings point into buf. */
	struct pyd_opts opt;
	char buf[512];
};

/*
 * Parse the arguments of command name ("py-bt", "py-tasks",
 * "py-sample"), words separated by blanks.  false with a message in err
 * (which names the command and how to get help).
 */
bool pyd_cmd_parse(const char *name, const char *args, struct pyd_cmd *c,
                   char *err, size_t errsz);

/* The most words command name takes, each of its options given once:
 * gdb's command file passes on as many as any command takes and one
 * more, for the message naming it. */
size_t pyd_cmd_most_words(const char *name);

/* The help of a command, as `help py-bt` shows it. */
const char *pyd_cmd_help(const char *name);

struct pyd_cmd_target {
	const struct pyd_memsrc *src;
	const struct pyd_runtime *rt;
	int pid;                 /* <= 0 if unknown */
	const char *origin;      /* "Process 1234", "Core file core.1234" */
	const char *source_kind; /* "process", "core" */
	int64_t selected_tid;    /* the debugger's selected thread, 0: none */
	/* py-up, py-down, ...: the shell's selection (NULL: none kept) */
	struct pyd_py_selection *sel;
	/* py-bt -n, py-up, py-down, py-frame: the selected thread's native
	 * frames */
	const struct pyd_native_frame *native;
	size_t nnative;
	/* Source lines for the text report (optional). */
	const char *(*source_line)(void *ctx, const char *file, int line);
	void *source_ctx;
};

/* The report a dump or a task graph is shown as, the same choice in every
 * shell: JSON, else text (dump) / the table or the tree (tasks). */
void pyd_show_dump(struct pyd_buf *out, const struct pyd_dump *d, bool json,
                   const struct pyd_report_opts *ro);
void pyd_show_tasks(struct pyd_buf *out, const struct pyd_task_graph *g,
                    bool json, bool table, const struct pyd_report_opts *ro);

/* The name of the i-th command a shell defines (py-bt ... py-print);
 * NULL past the last. */
const char *pyd_cmd_nth(size_t i);

/* Does command c want the selected thread's native frames? */
bool pyd_cmd_wants_native(const struct pyd_cmd *c);

/*
 * Run any command but py-sample (it needs a running process: lldb runs it
 * with pyd_cmd_sample, gdb through pystack-dump sample).  The report, or a message saying what went
 * wrong and what to do, is appended to out.  Returns PYD_OK or the error.
 */
enum pyd_err pyd_cmd_run(const struct pyd_cmd *c,
                         const struct pyd_cmd_target *t, struct pyd_buf *out);

/* The session a command named name runs on: the runtime found (or t's)
 * and a session opened on it; else the message saying why appended to
 * out, and the error. */
enum pyd_err pyd_cmd_open(const char *name, const struct pyd_cmd_target *t,
                          struct pyd_session **s, struct pyd_buf *out);

/* How py-sample lets the inferior run and stops it again (the debugger's
 * business).  resume returns once the inferior runs; stop once it is
 * stopped again; interrupted (optional) says the user pressed Ctrl-C. */
struct pyd_cmd_resume {
	void *ctx;
	enum pyd_err (*resume)(void *ctx);
	enum pyd_err (*stop)(void *ctx);
	bool (*interrupted)(void *ctx);
};

/*
 * Run py-sample, c as pyd_cmd_parse made it: t->src must read the
 * process while it runs (the live source, not the debugger) and t->rt
 * say where its runtime is.  Opens the sampler, resumes the inferior,
 * takes c->opt.samples rounds at c->opt.rate within samples / rate plus
 * half a second, stops it again and appends the profile to report (the
 * table, or c->opt.format / the format c->opt.output's name implies: the
 * frontend writes report to c->opt.output).
 * A summary, or what went wrong, is appended to msg.
 */
enum pyd_err pyd_cmd_sample(const struct pyd_cmd *c,
                            const struct pyd_cmd_target *t,
                            const struct pyd_cmd_resume *r,
                            struct pyd_buf *report, struct pyd_buf *msg);

#endif
