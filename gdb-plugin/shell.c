/*
 * The shell functions of the command file's steps (shell.h).
 *
 * The protocol (reader.c): `pipe pyd-gather ...` writes what gdb knows
 * into DIR/GDBPID.tmp or .req (DIR: ${TMPDIR:-/tmp}/pystack-dump-gdb-UID,
 * private to the user); `maint flush register-cache` and reading $pc make
 * gdb unwind the selected frame, which calls the reader, which runs the
 * request and prints the result.
 */
#include <stdio.h>
#include <string.h>

#include "../frontend/commands.h"
#include "request.h"
#include "shell.h"

/* The first words of every function: the private directory d and the base
 * b of this gdb's files ($PPID is gdb: it runs our shells).  The reader
 * puts the base in gdb's environment, which our shells inherit, so they
 * spawn no `id -u` for it; a base not this gdb's (a gdb started from our
 * gdb's shell, before its reader loads) is computed again. */
static const char sh_dir[] =
    "b=$" PYD_GDB_BASE_ENV "; case \"$b\" in */\"$PPID\") d=${b%/*};; "
    "*) d=${TMPDIR:-/tmp}/pystack-dump-gdb-$(id -u); b=\"$d/$PPID\";; esac";

/* One alternative of a shell case pattern, quoted, after the others. */
static void add_alternative(struct pyd_buf *out, const char *text)
{
	pyd_buf_printf(out, "%s\"%s\"", out->len ? "|" : "", text);
}

/* py-bt's words that make it want the native frames (-n, -N ...). */
static void native_words(struct pyd_buf *out)
{
	const char *words;
	for (size_t i = 0; (words = pyd_opts_nth_words(PYD_IN_BT, i)); i++)
		for (const char *w = words; *w;) {
			size_t n = strcspn(w, " ");
			char word[64];
			struct pyd_cmd c;
			char err[256];
			snprintf(word, sizeof word, "%.*s", (int)n, w);
			if (pyd_cmd_parse("py-bt", word, &c, err, sizeof err) &&
			    pyd_cmd_wants_native(&c))
				add_alternative(out, word);
			w += n + strspn(w + n, " ");
		}
}

/* A shell case pattern of the request lines after which a command wants
 * the native frames (pyd_cmd_wants_native): py-bt's words for them, the
 * names of the commands that always do. */
static void native_pattern(struct pyd_buf *out)
{
	native_words(out);
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++) {
		struct pyd_cmd c;
		char err[256], line[64];
		snprintf(line, sizeof line, "@cmd %s", n);
		if (pyd_cmd_parse(n, "", &c, err, sizeof err) &&
		    pyd_cmd_wants_native(&c))
			add_alternative(out, line);
	}
}

/*
 * One shell per command, and in it no program: each program gdb's shell
 * starts costs about as much as the dump itself (bench_gdb.py; a `cat`
 * was 2-3 ms of a 1,000-frame py-bt's 16 on a VM).  The lines after @cmd
 * (gdb's inferiors and threads, a line each) are copied by the shell's
 * own read and printf.  It reads the request's first lines (up to @cmd)
 * to tell whether the native frames are wanted, and what the target is; a
 * request that wants nothing more is written straight to BASE.req: the
 * reader takes it only once its last line (GDB_REQUEST_END) is in.  One
 * that does is written to BASE.tmp, and renamed once the rest is added
 * (pyd_add).  The rest: gdb's backtrace, and but for a local process
 * (whose /proc the reader reads) `info proc mappings`, which costs gdb
 * more than the rest of the request together.
 */
static void request(struct pyd_buf *out)
{
	struct pyd_buf native = {0};
	native_pattern(&native);
	pyd_buf_printf(
	    out,
	    "pyd_request() { %s; [ -d \"$d\" ] || mkdir -p -m 700 \"$d\"; "
	    "[ -O \"$d\" ] && [ ! -L \"$d\" ] || exit 2; set --; n=; m=1; "
	    "t=; while IFS= read -r l; do set -- \"$@\" \"$l\"; "
	    "case \"$l\" in @*) t=$l;; esac; "
	    "case \"$t$l\" in \"@target  - native \"*) m=;; esac; "
	    "case \"$l\" in %s) n=1;; esac; "
	    "case \"$l\" in \"@cmd \"*) break;; esac; done; s=1; "
	    "if [ -e \"$b.req\" ]; then s=3; echo \"${l#@cmd }: "
	    "pystack-dump's JIT reader did not take the last request "
	    "(was it unloaded?): loading it again\"; fi; "
	    "f=\"$b.req\"; [ -z \"$n$m\" ] || f=\"$b.tmp\"; "
	    "{ printf '%%s\\n' \"$@\"; while IFS= read -r l || "
	    "[ -n \"$l\" ]; do printf '%%s\\n' \"$l\"; done; } "
	    ">\"$f\" || exit 2; "
	    "[ -z \"$m\" ] || exit $((4 + ${n:-0})); "
	    "[ -z \"$n\" ] || exit 0; exit $s; }\n",
	    sh_dir, native.data);
	pyd_buf_free(&native);
}

void gdb_shell_functions(struct pyd_buf *out)
{
	request(out);
	pyd_buf_printf(out,
	               "pyd_add() { %s; { echo \"@$1\"; cat; } >>\"$b.tmp\" "
	               "|| exit 2; [ -z \"$2\" ] || mv \"$b.tmp\" \"$b.req\"; "
	               "}\n",
	               sh_dir);
	pyd_buf_printf(out,
	               "pyd_sample() { %s; [ -e \"$b.sh\" ] || exit 1; "
	               "sh \"$b.sh\" </dev/null >/dev/null 2>&1 & }\n",
	               sh_dir);
	pyd_buf_printf(out,
	               "pyd_sampled() { %s; i=0; while [ ! -e \"$b.txt\" ] && "
	               "[ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done; "
	               "cat \"$b.txt\" 2>/dev/null || echo \"py-sample: the "
	               "sampler did not finish\"; rm -f \"$b.txt\"; }\n",
	               sh_dir);
	/* gdb takes a frame number only from an exit code: up to 254. */
	pyd_buf_printf(out,
	               "pyd_select() { %s; n=$(cat \"$b.sel\" 2>/dev/null); "
	               "rm -f \"$b.sel\"; case \"$n\" in ''|*[!0-9]*) exit 255;; "
	               "esac; [ \"$n\" -lt 255 ] && exit \"$n\"; exit 255; }\n",
	               sh_dir);
}
