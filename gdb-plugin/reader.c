/*
 * pystack-dump's gdb plugin: a JIT reader that registers no JIT code.
 *
 * gdb has no C API for commands, but once a JIT reader is loaded it calls
 * the reader's unwind callback for every frame it unwinds, on its main
 * thread, with a target_read that reads the current inferior through
 * gdb's target stack.  The command file (pystack-dump.gdb) writes a
 * request file named after gdb's pid and makes gdb unwind; the callback
 * finds the request, removes it, runs it once and prints the result.  It
 * always answers GDB_FAIL, so gdb's own unwinding is never touched.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../frontend/explain.h"
#include "../frontend/source.h"
#include "plugin.h"
#include "shell.h"
#include "buf.h"

GDB_DECLARE_GPL_COMPATIBLE_READER

/* Requests are a few KB; anything bigger is not ours. */
#define MAX_REQUEST (16 << 20)

/* ${TMPDIR:-/tmp}/pystack-dump-gdb-UID/GDBPID: the command file's names. */
static char base[4096];
static char request_path[4200];
/* A request runs to its end before the next one is looked for. */
static int running;
/* The Python frame py-up and py-down selected, for the next command. */
static struct pyd_py_selection selection = {0, 0, -1};

static void print(const struct pyd_buf *b)
{
	if (b->data)
		fwrite(b->data, 1, b->len, stdout);
	fflush(stdout);
}

/* Only a directory of our own, which nobody else can write into, may
 * hand us requests. */
static int dir_is_ours(void)
{
	char dir[4096];
	struct stat st;
	snprintf(dir, sizeof dir, "%s", base);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == getuid() && !(st.st_mode & 022);
}

/* Delete BASE.suffix. */
static void remove_file(const char *suffix)
{
	char path[4200];
	snprintf(path, sizeof path, "%s.%s", base, suffix);
	unlink(path);
}

/* The request file's text, removed so it runs once; NULL if none, or if
 * it is still being written (left for the unwind that follows).  A
 * py-sample script or result of an earlier request must not pass for
 * this one's. */
static char *take_request(void)
{
	struct stat st;
	int fd = open(request_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *text = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= MAX_REQUEST &&
	    (text = malloc((size_t)st.st_size + 1))) {
		ssize_t n = read(fd, text, (size_t)st.st_size);
		text[n > 0 ? n : 0] = 0;
	}
	close(fd);
	if (text && !gdb_request_whole(text)) {
		free(text);
		return NULL;
	}
	unlink(request_path);
	remove_file("sh");
	remove_file("txt");
	return text;
}

/* BASE.sel: the native frame the command file's pyd-select selects. */
static void write_selection(long frame)
{
	char path[4200];
	snprintf(path, sizeof path, "%s.sel", base);
	FILE *f = fopen(path, "we");
	if (f) {
		fprintf(f, "%ld\n", frame);
		fclose(f);
	}
}

static void run_dump(struct gdb_src *g, const struct pyd_cmd *c,
                     struct pyd_buf *out)
{
	const struct gdb_request *r = g->req;
	char origin[4300], root[64] = "";
	gdb_src_origin(g, origin, sizeof origin);
	if (g->live)
		snprintf(root, sizeof root, "/proc/%d/root", r->pid);
	/* A core's sources are under gdb's sysroot, as its files are (and as
	 * pystack-dump --core --sysroot reads them). */
	struct source_cache *sc =
	    source_cache_new(root[0] ? root : !g->live ? r->sysroot : NULL);
	struct pyd_cmd_target t = {
	    .src = &g->src,
	    .pid = r->pid,
	    .origin = origin,
	    .source_kind = r->kind == GDB_TARGET_CORE ? "core" : "process",
	    .selected_tid = r->selected,
	    .sel = &selection,
	    .native = r->native,
	    .nnative = r->nnative,
	    .source_line = sc ? source_cache_line : NULL,
	    .source_ctx = sc,
	};
	selection.native = -1;
	pyd_cmd_run(c, &t, out);
	source_cache_free(sc);
	if (selection.native >= 0)
		write_selection(selection.native);
}

static void run_request(struct gdb_request *r, gdb_target_read *target_read)
{
	struct pyd_cmd c;
	struct pyd_buf out = {0};
	char err[512];
	if (!pyd_cmd_parse(r->name, r->args, &c, err, sizeof err)) {
		pyd_buf_printf(&out, "%s\n", err);
	} else if (r->kind == GDB_TARGET_NONE) {
		pyd_explain_debugger_say(&out, r->name, PYD_SAY_NO_TARGET,
		                         NULL, NULL);
	} else {
		struct gdb_src g;
		gdb_src_open(&g, target_read, r);
		if (c.kind == PYD_CMD_SAMPLE)
			gdb_sample_start(&g, &c, base, &out);
		else
			run_dump(&g, &c, &out);
		gdb_src_close(&g);
	}
	print(&out);
	pyd_buf_free(&out);
}

static enum gdb_status reader_unwind(struct gdb_reader_funcs *self,
                                     struct gdb_unwind_callbacks *cb)
{
	(void)self;
	if (running || access(request_path, F_OK) != 0 || !dir_is_ours())
		return GDB_FAIL;
	running = 1;
	char *text = take_request();
	struct gdb_request r;
	if (text) {
		if (gdb_request_parse(text, &r))
			run_request(&r, cb->target_read);
		gdb_request_free(&r);
	}
	running = 0;
	return GDB_FAIL;
}

/* We register no JIT code, so gdb has no debug info to ask us about. */
static enum gdb_status reader_read(struct gdb_reader_funcs *self,
                                   struct gdb_symbol_callbacks *cb,
                                   void *memory, long memory_sz)
{
	(void)self;
	(void)cb;
	(void)memory;
	(void)memory_sz;
	return GDB_FAIL;
}

/* Only asked of frames we unwound, and we unwind none. */
static struct gdb_frame_id reader_frame_id(struct gdb_reader_funcs *self,
                                           struct gdb_unwind_callbacks *cb)
{
	(void)self;
	(void)cb;
	return (struct gdb_frame_id){0, 0};
}

static void reader_destroy(struct gdb_reader_funcs *self)
{
	(void)self;
}

static struct gdb_reader_funcs funcs = {
    .reader_version = GDB_READER_INTERFACE_VERSION,
    .read = reader_read,
    .unwind = reader_unwind,
    .get_frame_id = reader_frame_id,
    .destroy = reader_destroy,
};

struct gdb_reader_funcs *gdb_init_reader(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof base, "%s/pystack-dump-gdb-%u/%d",
	         tmp && *tmp ? tmp : "/tmp", (unsigned)getuid(), (int)getpid());
	snprintf(request_path, sizeof request_path, "%s.req", base);
	/* The command file's shells find the base here, and the directory
	 * made, without a program of their own for either; and the
	 * functions they run, which the command file, read by gdb a byte at
	 * a time, is cheaper without (shell.h). */
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", base);
	*strrchr(dir, '/') = 0;
	mkdir(dir, 0700);
	setenv(PYD_GDB_BASE_ENV, base, 1);
	struct pyd_buf sh = {0};
	gdb_shell_functions(&sh);
	if (sh.data)
		setenv(PYD_GDB_SH_ENV, sh.data, 1);
	pyd_buf_free(&sh);
	running = 0;
	return &funcs;
}
