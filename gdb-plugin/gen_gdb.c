/*
 * Writes pystack-dump.gdb, the command file that defines py-bt, py-tasks,
 * py-sample, py-up, py-down, py-frame, py-list, py-locals and py-print in
 * gdb without gdb's Python: gen_gdb READER.so CLI HELP.gdb; and with
 * gen_gdb --docs, HELP.gdb, their help texts.  A relative path is taken
 * under gdb's $pystack_dump_prefix: gdb cannot tell a command file where
 * it is, so an installed one (which may have moved with its prefix: a
 * wheel's) learns its prefix from the line before `source`.
 *
 * Generated because gdb's command language has no string operations: a
 * user command passes its words on only through eval, from a list of
 * $argN that the command file spells out; and because each
 * command's `help` must be pyd_cmd_help's text, word for word.
 *
 * gdb reads a command file a byte at a time (a read and a select each:
 * bench/bench_gdb.py times it): its size is most of what sourcing it
 * costs, so it is written without indentation or comments, with short
 * variable names; the shell text of its steps is not in it but in gdb's
 * environment, where the reader leaves it (shell.h); and the help texts,
 * 40% of it, are in HELP.gdb, which gdb reads the first time help or
 * apropos runs.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../frontend/commands.h"
#include "../frontend/explain.h"
#include "request.h"

/* The gdb variable that holds the prefix of relative paths. */
#define PREFIX_VAR "$pystack_dump_prefix"

/* The prefix of the gdb variables of ours. */
#define VAR "$_pyd_"

static void header(const char *reader, const char *cli, const char *help)
{
	printf("# By pystack-dump's gen_gdb.c: see pystack-dump --debugger-setup\n");
	if (reader[0] == '/' && cli[0] == '/' && help[0] == '/')
		return;
	printf("if $_isvoid(" PREFIX_VAR ")\n"
	       "echo pystack-dump.gdb: set " PREFIX_VAR " before sourcing "
	       "this file: pystack-dump --debugger-setup prints the lines\\n\n"
	       "end\n");
}

/* The gdb command `cmd PATH`, with echo's "\n" after PATH if
 * newline: an absolute path as it is, a relative one under PREFIX_VAR,
 * which only eval can join to it (its template unescapes once more). */
static void path_command(const char *cmd, const char *path, bool newline)
{
	if (path[0] == '/')
		printf("%s %s%s\n", cmd, path, newline ? "\\n" : "");
	else
		printf("eval \"%s %%s/%s%s\", " PREFIX_VAR "\n", cmd, path,
		       newline ? "\\\\n" : "");
}

/* A section no file has: `maint info sections` of it prints only the
 * names of the executable and the core (request.c's parse_target). */
#define NO_SECTION ".pystack-dump-no-section"

/* pyd-gather NAME WORDS...: what the reader needs, under "@" lines, the
 * target before @cmd, where the shell stops reading (shell.c), and
 * without the mappings, added for what is not a local process.  The
 * words are echoed by a loop: eval's command has its $argN put in. */
static void gather(const char *cli)
{
	printf("define pyd-gather\n");
	path_command("echo @cli", cli, true);
	printf("echo @args\\n\n"
	       "set " VAR "i = 1\n"
	       "while " VAR "i < $argc\n"
	       "eval \"echo $arg%%d\\\\n\", " VAR "i\n"
	       "set " VAR "i = " VAR "i + 1\n"
	       "end\n"
	       "echo @target\\n\nmaint print target-stack\n"
	       "maint info sections " NO_SECTION "\n"
	       "echo @cmd $arg0\\n\n"
	       "echo @inferiors\\n\ninfo inferiors\n"
	       "echo @threads\\n\ninfo threads\n"
	       "echo @sysroot\\n\nshow sysroot\n"
	       "echo " GDB_REQUEST_END "\\n\n"
	       "end\n");
}

/* A shell command that calls one of the reader's functions (shell.h);
 * without the reader's environment the shell says the variable is not
 * set, and fails. */
#define SHELL_CALL(fn) "eval \"${" PYD_GDB_SH_ENV ":?}\"; " fn

/* gdb's echo of the message table's words for no process: its escapes
 * are C's.  name may be "$arg0", which gdb puts the command's name in. */
static void echo_no_target(const char *name)
{
	struct pyd_buf b = {0};
	pyd_explain_debugger_say(&b, name, PYD_SAY_NO_TARGET, NULL, NULL);
	printf("echo ");
	for (size_t i = 0; i < b.len; i++) {
		if (b.data[i] == '\n')
			fputs("\\n", stdout);
		else if (b.data[i] == '\\')
			fputs("\\\\", stdout);
		else
			putchar(b.data[i]);
	}
	putchar('\n');
	pyd_buf_free(&b);
}

/* The most words a user command of ours passes on: any command's most
 * and one more, for the message naming it. */
static int most_words(void)
{
	size_t most = 0;
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		if (pyd_cmd_most_words(n) > most)
			most = pyd_cmd_most_words(n);
	return (int)most + 1;
}

/* Each word of $_pyd_w takes WORD_WIDTH characters, " $argN" padded: the
 * first N words are its first WORD_WIDTH * N. */
#define WORD_WIDTH 7

/* The variable $_pyd_w = " $arg0  $arg1 ...", from which a user command
 * passes on its words, however many: gdb cannot join strings, so it passes
 * them by eval, which puts in the first $argc of them (word_eval).  Set in
 * C, a string's syntax being the language's.  One word more than any
 * command takes, which the command's parser then refuses. */
static void word_list(void)
{
	printf("with language c -- set " VAR "w = \"");
	for (int i = 0; i <= most_words(); i++)
		printf(" $arg%-*d", WORD_WIDTH - 5, i);
	printf("\"\n");
}

/* text as it reads in the string of gdb's eval: a C string and a
 * printf format. */
static void format_quoted(struct pyd_buf *out, const char *text)
{
	for (; *text; text++) {
		if (*text == '%' || *text == '"' || *text == '\\')
			pyd_buf_put(out, *text == '%' ? "%" : "\\", 1);
		pyd_buf_put(out, text, 1);
	}
}

/* The line that runs `before WORDS after` with the user command's words:
 * eval writes the length of $argc words into the format of its eval,
 * which takes that much of $_pyd_w, whose $argN gdb then replaces. */
static void word_eval(const char *before, const char *after)
{
	struct pyd_buf head = {0}, tail = {0}, outer = {0};
	pyd_buf_str(&head, "eval \"");
	format_quoted(&head, before);
	format_quoted(&tail, after);
	pyd_buf_str(&tail, "\", " VAR "w");
	format_quoted(&outer, head.data);
	pyd_buf_str(&outer, "%%.%ds");
	format_quoted(&outer, tail.data);
	printf("eval \"%s\", %d*$argc\n", outer.data, WORD_WIDTH);
	pyd_buf_free(&head);
	pyd_buf_free(&tail);
	pyd_buf_free(&outer);
}

/*
 * pyd-run NAME WORDS...: load the reader once per gdb session, write the
 * request and make gdb unwind.  The request's shell (pyd_request) exits 0
 * when the command needs the native frames too (py-bt -n, py-up ...),
 * whose backtrace is then added, 4 when the target's mappings are wanted
 * (not a local process), 5 when both are, and 3 when it finds the
 * previous request still there: the reader did not take it (it was
 * unloaded), so it is loaded again.
 */
static void run(const char *reader)
{
	printf("define pyd-run\n"
	       "if $_thread == 0\n");
	echo_no_target("$arg0");
	printf("else\n"
	       "if $_isvoid(" VAR "reader)\n");
	path_command("jit-reader-load", reader, false);
	printf("set " VAR "reader = 1\n"
	       "end\n");
	word_eval("pipe pyd-gather", " | " SHELL_CALL("pyd_request"));
	printf("set " VAR "s = $_shell_exitcode\n"
	       "if " VAR "s == 3\n");
	path_command("jit-reader-load", reader, false);
	printf("end\n"
	       "if " VAR "s == 4\n"
	       "pipe info proc mappings | " SHELL_CALL("pyd_add maps 1") "\n"
	       "end\n"
	       "if " VAR "s == 5\n"
	       "pipe info proc mappings | " SHELL_CALL("pyd_add maps") "\n"
	       "set " VAR "s = 0\n"
	       "end\n"
	       "if " VAR "s == 0\n"
	       "pipe bt -past-main on -past-entry on -frame-arguments none "
	       "-frame-info location-and-address | " SHELL_CALL("pyd_add bt 1") "\n"
	       "end\n"
	       "maint flush register-cache\n"
	       "set " VAR "pc = $pc\n"
	       "end\n"
	       "end\n");
}

/* After py-sample's request: if the reader wrote the sampler's script,
 * start it and let the inferior run until the sampler interrupts gdb,
 * then show what it left. */
static void sample_wait(void)
{
	printf("define pyd-sample-wait\n"
	       "if $_thread != 0\n"
	       "shell " SHELL_CALL("pyd_sample") "\n"
	       "if $_shell_exitcode == 0\n"
	       "continue\n"
	       "shell " SHELL_CALL("pyd_sampled") "\n"
	       "end\n"
	       "end\n"
	       "end\n");
}

/* After py-up, py-down, py-frame ...: select the native frame the reader
 * named. */
static void select_native(void)
{
	printf("define pyd-select\n"
	       "if $_thread != 0\n"
	       "shell " SHELL_CALL("pyd_select") "\n"
	       "if $_shell_exitcode != 255\n"
	       "select-frame $_shell_exitcode\n"
	       "end\n"
	       "end\n"
	       "end\n");
}

/* help and apropos load the help texts first, once: sourcing them costs
 * every command of ours 40% more (the file comment). */
static void help_hooks(const char *help)
{
	printf("define hook-help\n"
	       "if $_isvoid(" VAR "doc)\n"
	       "set " VAR "doc = 1\n");
	path_command("source", help, false);
	printf("end\n"
	       "end\n"
	       "define hook-apropos\n"
	       "hook-help\n"
	       "end\n");
}

static void command(const char *name)
{
	char before[64];
	snprintf(before, sizeof before, "pyd-run %s", name);
	printf("define %s\n", name);
	word_eval(before, "");
	struct pyd_cmd c;
	char err[256];
	if (!strcmp(name, "py-sample"))
		printf("pyd-sample-wait\n");
	else if (pyd_cmd_parse(name, "", &c, err, sizeof err) &&
	         pyd_cmd_wants_native(&c))
		printf("pyd-select\n");
	printf("end\n");
}

/* HELP.gdb: each command's `help`, pyd_cmd_help's text word for word,
 * and a line for the internal ones. */
static void docs(void)
{
	static const char *const internal[] = {
		"pyd-gather", "pyd-run", "pyd-sample-wait", "pyd-select",
		"hook-help", "hook-apropos",
	};
	printf("# By pystack-dump's gen_gdb.c: the help of pystack-dump.gdb\n");
	for (size_t i = 0; i < sizeof internal / sizeof *internal; i++)
		printf("document %s\nInternal to pystack-dump.\nend\n",
		       internal[i]);
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		printf("document %s\n%send\n", n, pyd_cmd_help(n));
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--docs")) {
		docs();
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: gen_gdb READER.so PYSTACK-DUMP HELP.gdb\n"
				"       gen_gdb --docs\n");
		return 2;
	}
	header(argv[1], argv[2], argv[3]);
	word_list();
	gather(argv[2]);
	run(argv[1]);
	sample_wait();
	select_native();
	help_hooks(argv[3]);
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		command(n);
	return 0;
}
