/*
 * Writes pystack-dump.gdb, the command file that defines py-bt, py-tasks,
 * py-sample, py-up, py-down, py-frame, py-list, py-locals and py-print in
 * gdb without gdb's Python: gen_gdb READER.so CLI.  A relative path is
 * taken under gdb's $pystack_dump_prefix: gdb cannot tell a command file
 * where it is, so an installed one (which may have moved with its
 * prefix: a wheel's) learns its prefix from the line before `source`.
 *
 * Generated because gdb's command language has no string operations: a
 * user command can only pass its words on one by one, under `if $argc ==
 * N`, so the command file spells every count out; and because each
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

/* pyd-gather NAME WORDS...: what the reader needs, under "@" lines.  The
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
	       "echo @cmd $arg0\\n\n"
	       "echo @inferiors\\n\ninfo inferiors\n"
	       "echo @target\\n\nmaint print target-stack\n"
	       "maint info sections " NO_SECTION "\n"
	       "echo @threads\\n\ninfo threads\n"
	       "echo @maps\\n\ninfo proc mappings\n"
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

/* The words of a user command, "$arg0 $arg1 ..." for n of them. */
static void words(int n)
{
	for (int i = 0; i < n; i++)
		printf(" $arg%d", i);
}

/* A command passes on each count of words it may take, then, for more,
 * one word beyond them: the reader names it in its message (the rest are
 * left out, since each count spelled out makes the file longer). */
static int words_passed(const char *name)
{
	return (int)pyd_cmd_most_words(name) + 1;
}

/* The most words any command passes on. */
static int most_words_passed(void)
{
	int most = 0;
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		if (words_passed(n) > most)
			most = words_passed(n);
	return most;
}

/*
 * pyd-run NAME WORDS...: load the reader once per gdb session, write the
 * request and make gdb unwind.  The request's shell (pyd_request) exits 0
 * when the command needs the native frames too (py-bt -n, py-up ...),
 * whose backtrace is then added, and 3 when it finds the previous request
 * still there: the reader did not take it (it was unloaded), so it is
 * loaded again.
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
	for (int n = 1, most = most_words_passed(); n <= most + 1; n++) {
		printf("if $argc == %d\npipe pyd-gather", n);
		words(n);
		printf(" | " SHELL_CALL("pyd_request") "\nend\n");
	}
	printf("if $_shell_exitcode == 3\n");
	path_command("jit-reader-load", reader, false);
	printf("end\n"
	       "if $_shell_exitcode == 0\n"
	       "pipe bt -past-main on -past-entry on -frame-arguments none "
	       "-frame-info location-and-address | " SHELL_CALL("pyd_bt") "\n"
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
	int last = words_passed(name);
	printf("define %s\n", name);
	for (int n = 0; n <= last; n++) {
		printf("if $argc %s %d\npyd-run %s", n < last ? "==" : ">=", n,
		       name);
		words(n);
		printf("\nend\n");
	}
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
	gather(argv[2]);
	run(argv[1]);
	sample_wait();
	select_native();
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		command(n);
	return 0;
}
