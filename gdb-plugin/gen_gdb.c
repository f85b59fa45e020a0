/*
 * Writes pystack-dump.gdb, the command file that defines py-bt, py-tasks,
 * py-sample, py-up, py-down, py-frame, py-list, py-locals and py-print in
 * gdb without gdb's Python: gen_gdb READER.so CLI.  A relative path is
 * taken under gdb's $pystack_dump_prefix: gdb cannot tell a command file
 * where it is, so an installed one (which may have moved with its
 * prefix: a wheel's) learns its prefix from the line before `source`.
 *
 * Generated because gdb's command language has no string operations: a
 * user command passes its words on only through eval, from a list of
 * $argN per count that the command file spells out; and because each
 * command's `help` must be pyd_cmd_help's text, word for word.
 *
 * gdb reads a command file a byte at a time (a read and a select each):
 * its size is most of what sourcing it costs, so it is written without
 * indentation or comments, and the shell text of its steps is not in it
 * but in gdb's environment, where the reader leaves it (shell.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../frontend/commands.h"
#include "../frontend/explain.h"
#include "request.h"

/* The gdb variable that holds the prefix of relative paths. */
#define PREFIX_VAR "$pystack_dump_prefix"

static void header(const char *reader, const char *cli)
{
	printf("# pystack-dump's gdb commands (no gdb Python): see\n"
	       "# pystack-dump --debugger-setup.  By gdb-plugin/gen_gdb.c.\n");
	if (reader[0] == '/' && cli[0] == '/')
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
	       "set $_pystack_dump_i = 1\n"
	       "while $_pystack_dump_i < $argc\n"
	       "eval \"echo $arg%%d\\\\n\", $_pystack_dump_i\n"
	       "set $_pystack_dump_i = $_pystack_dump_i + 1\n"
	       "end\n"
	       "echo @target\\n\nmaint print target-stack\n"
	       "maint info sections " NO_SECTION "\n"
	       "echo @cmd $arg0\\n\n"
	       "echo @inferiors\\n\ninfo inferiors\n"
	       "echo @threads\\n\ninfo threads\n"
	       "echo @sysroot\\n\nshow sysroot\n"
	       "echo " GDB_REQUEST_END "\\n\n"
	       "end\n"
	       "document pyd-gather\n"
	       "Internal to pystack-dump.\n"
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

/* The variables $_pystack_dump_wN = " $arg0 ... $argN-1" for each count
 * of words pyd-run is given (a name and its words): gdb cannot join
 * strings, so a user command passes its words on by eval, which puts
 * them in (word_eval).  Set in C: a string's syntax is the language's. */
static void word_lists(void)
{
	for (int n = 0; n <= most_words() + 1; n++) {
		printf("with language c -- set $_pystack_dump_w%d = \"", n);
		for (int i = 0; i < n; i++)
			printf(" $arg%d", i);
		printf("\"\n");
	}
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
 * eval picks $_pystack_dump_w$argc, and its eval puts that list in, whose
 * $argN gdb then replaces. */
static void word_eval(const char *before, const char *after)
{
	struct pyd_buf inner = {0}, outer = {0};
	pyd_buf_str(&inner, "eval \"");
	format_quoted(&inner, before);
	pyd_buf_str(&inner, "%s");
	format_quoted(&inner, after);
	pyd_buf_str(&inner, "\", $_pystack_dump_w");
	format_quoted(&outer, inner.data);
	printf("eval \"%s%%d\", $argc\n", outer.data);
	pyd_buf_free(&inner);
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
	       "if $_isvoid($_pystack_dump_reader)\n");
	path_command("jit-reader-load", reader, false);
	printf("set $_pystack_dump_reader = 1\n"
	       "end\n");
	word_eval("pipe pyd-gather", " | " SHELL_CALL("pyd_request"));
	printf("set $_pystack_dump_s = $_shell_exitcode\n"
	       "if $_pystack_dump_s == 3\n");
	path_command("jit-reader-load", reader, false);
	printf("end\n"
	       "if $_pystack_dump_s == 4\n"
	       "pipe info proc mappings | " SHELL_CALL("pyd_add maps 1") "\n"
	       "end\n"
	       "if $_pystack_dump_s == 5\n"
	       "pipe info proc mappings | " SHELL_CALL("pyd_add maps") "\n"
	       "set $_pystack_dump_s = 0\n"
	       "end\n"
	       "if $_pystack_dump_s == 0\n"
	       "pipe bt -past-main on -past-entry on -frame-arguments none "
	       "-frame-info location-and-address | " SHELL_CALL("pyd_add bt 1") "\n"
	       "end\n"
	       "maint flush register-cache\n"
	       "set $_pystack_dump_pc = $pc\n"
	       "end\n"
	       "end\n"
	       "document pyd-run\n"
	       "Internal to pystack-dump.\n"
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
	       "end\n"
	       "document pyd-sample-wait\n"
	       "Internal to pystack-dump.\n"
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
	       "end\n"
	       "document pyd-select\n"
	       "Internal to pystack-dump.\n"
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
	printf("end\ndocument %s\n%send\n", name, pyd_cmd_help(name));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: gen_gdb READER.so PYSTACK-DUMP\n");
		return 2;
	}
	header(argv[1], argv[2]);
	word_lists();
	gather(argv[2]);
	run(argv[1]);
	sample_wait();
	select_native();
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		command(n);
	return 0;
}
