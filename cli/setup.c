/*
 * pystack-dump --debugger-setup: the lines that load this pystack-dump's
 * gdb and lldb plugins, for ~/.gdbinit and ~/.lldbinit.
 *
 * The plugins are found from where this executable is, not from the
 * prefix it was configured with: a wheel is built under one prefix and
 * installed under another (a venv, ~/.local), and an installed tree may
 * move.  meson.build says where they go relative to the prefix
 * (PYD_PLUGIN_SO_DIR, PYD_PLUGIN_CMD_DIR) and where this executable goes
 * (PYD_BINDIR); PYD_BUILD_ROOT is the build tree, whose plugins serve a
 * pystack-dump run from there.
 */
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define EXE_NAME "pystack-dump"

/* Where the plugins of this pystack-dump are; prefix "" in the build tree,
 * whose command file names its reader itself. */
struct plugins {
	char prefix[PATH_MAX];
	char gdb_cmds[PATH_MAX], gdb_reader[PATH_MAX], lldb[PATH_MAX];
};

/* dir/name into out ("" if too long); an absolute name as it is. */
static void join(char *out, const char *dir, const char *name)
{
	int n = name[0] == '/' ? snprintf(out, PATH_MAX, "%s", name)
	                       : snprintf(out, PATH_MAX, "%s/%s", dir, name);
	if (n < 0 || n >= PATH_MAX)
		out[0] = '\0';
}

static void in_build_tree(struct plugins *p)
{
	p->prefix[0] = '\0';
	join(p->gdb_cmds, PYD_BUILD_ROOT, "gdb-plugin/pystack-dump.gdb");
	join(p->gdb_reader, PYD_BUILD_ROOT, "gdb-plugin/pystack-dump-gdb.so");
	join(p->lldb, PYD_BUILD_ROOT, "lldb-plugin/pystack-dump-lldb.so");
}

/* The prefix of an executable installed as exe: exe less BINDIR/NAME, or
 * the configured prefix where bindir was given outside it.  False if exe
 * is not where an installation puts it. */
static bool prefix_of(const char *exe, char *prefix)
{
	if (PYD_BINDIR[0] == '/') {
		snprintf(prefix, PATH_MAX, "%s", PYD_PREFIX);
		return true;
	}
	const char *tail = "/" PYD_BINDIR "/" EXE_NAME;
	size_t n = strlen(exe), t = strlen(tail);
	if (n <= t || strcmp(exe + n - t, tail))
		return false;
	snprintf(prefix, PATH_MAX, "%.*s", (int)(n - t), exe);
	return true;
}

static bool installed(const char *exe, struct plugins *p)
{
	if (!prefix_of(exe, p->prefix))
		return false;
	char so_dir[PATH_MAX], cmd_dir[PATH_MAX];
	join(so_dir, p->prefix, PYD_PLUGIN_SO_DIR);
	join(cmd_dir, p->prefix, PYD_PLUGIN_CMD_DIR);
	join(p->gdb_cmds, cmd_dir, "pystack-dump.gdb");
	join(p->gdb_reader, so_dir, "pystack-dump-gdb.so");
	join(p->lldb, so_dir, "pystack-dump-lldb.so");
	return true;
}

/* s in double quotes, as gdb's and lldb's command lines read them. */
static void put_quoted(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

static bool present(const char *path)
{
	return path[0] && access(path, R_OK) == 0;
}

/* glibc version name ("GLIBC_2.33") as a number to compare (2033). */
static long glibc_version(const char *name)
{
	char *end;
	if (strncmp(name, "GLIBC_", 6))
		return 0;
	long major = strtol(name + 6, &end, 10);
	long minor = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
	return major * 1000 + minor;
}

/*
 * What the plugin at path needs of the machine, as comments: the shared
 * libraries it loads (DT_NEEDED) and the newest glibc version it names.
 * Unlike pystack-dump, a static executable, a plugin is a shared object
 * loaded into gdb or lldb: it runs only where those libraries are, and
 * this says so before a debugger refuses to load it.
 */
static void say_needs(const char *who, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	elf_version(EV_CURRENT);
	Elf *e = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	long glibc = 0;
	printf("# the %s plugin loads", who);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d = gelf_getshdr(scn, &sh) ? elf_getdata(scn, NULL) : NULL;
		if (!d)
			continue;
		if (sh.sh_type == SHT_DYNAMIC) {
			GElf_Dyn dyn;
			for (int i = 0; gelf_getdyn(d, i, &dyn); i++)
				if (dyn.d_tag == DT_NEEDED)
					printf(" %s", elf_strptr(e, sh.sh_link,
					                         dyn.d_un.d_val));
		} else if (sh.sh_type == SHT_GNU_verneed) {
			GElf_Verneed vn;
			GElf_Vernaux va;
			for (size_t off = 0; gelf_getverneed(d, off, &vn);
			     off += vn.vn_next) {
				for (size_t a = off + vn.vn_aux;
				     gelf_getvernaux(d, a, &va); a += va.vna_next) {
					long v = glibc_version(elf_strptr(
					    e, sh.sh_link, va.vna_name));
					glibc = v > glibc ? v : glibc;
					if (!va.vna_next)
						break;
				}
				if (!vn.vn_next)
					break;
			}
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	if (glibc)
		printf(" and needs glibc %ld.%ld or newer", glibc / 1000,
		       glibc % 1000);
	printf(":\n# where one is missing (or glibc is older) %s refuses "
	       "to load it, saying which;\n# install that library, or build "
	       "pystack-dump there from source\n", who);
}

/* Why debugger `who` has no plugin: the file missing ("" when none is
 * looked for: a static build) and why. */
static void no_plugin(const char *who, const char *file, const char *why)
{
	printf("# %s: no plugin%s%s%s: %s\n", who, file[0] ? " (no " : "", file,
	       file[0] ? ")" : "", why);
}

static void gdb_lines(const struct plugins *p)
{
	if (!present(p->gdb_cmds) || !present(p->gdb_reader)) {
		no_plugin("gdb", present(p->gdb_cmds) ? p->gdb_reader
						     : p->gdb_cmds,
			  PYD_GDB_LEFT_OUT);
		return;
	}
	printf("# ~/.gdbinit: py-bt, py-tasks, py-sample ... in gdb\n");
	if (p->prefix[0]) {
		printf("set $pystack_dump_prefix = ");
		put_quoted(p->prefix);
		putchar('\n');
	}
	printf("source %s\n", p->gdb_cmds);
	say_needs("gdb", p->gdb_reader);
}

static void lldb_lines(const struct plugins *p)
{
	if (!present(p->lldb)) {
		no_plugin("lldb", p->lldb, PYD_LLDB_LEFT_OUT);
		return;
	}
	printf("# ~/.lldbinit: the same commands in lldb\nplugin load ");
	put_quoted(p->lldb);
	putchar('\n');
	say_needs("lldb", p->lldb);
}

int cli_debugger_setup(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		perror("pystack-dump: /proc/self/exe");
		return 1;
	}
	exe[n] = '\0';
	struct plugins p = {0};
	if (PYD_NO_PLUGINS)
		; /* the lines below say why there are none */
	else if (!strcmp(exe, PYD_BUILD_ROOT "/cli/" EXE_NAME))
		in_build_tree(&p);
	else if (!installed(exe, &p)) {
		fprintf(stderr, "pystack-dump: cannot tell where the debugger "
		        "plugins are: %s is neither in its build tree nor "
		        "installed as PREFIX/%s/%s (pip install, meson install)\n",
		        exe, PYD_BINDIR, EXE_NAME);
		return 1;
	}
	gdb_lines(&p);
	putchar('\n');
	lldb_lines(&p);
	return 0;
}
