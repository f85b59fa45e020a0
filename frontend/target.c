/*
 * Opening what a dump reads (target.h).
 */
#include "target.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static enum pyd_err open_source(const struct target_spec *spec,
				struct target *t, char *detail, size_t detailsz)
{
	if (spec->snapshot) {
		t->kind = "snapshot";
		enum pyd_err err = pyd_snapshot_open(spec->snapshot, &t->snap,
						     detail, detailsz);
		if (err)
			return err;
		t->src = pyd_snapshot_memsrc(t->snap);
		t->pid = pyd_snapshot_pid(t->snap);
		return PYD_OK;
	}
	if (spec->core) {
		struct pyd_core_opts o = {.exe = spec->exe, .sysroot = spec->sysroot};
		t->kind = "core";
		enum pyd_err err = pyd_core_open(spec->core, &o, &t->core, detail,
						 detailsz);
		if (err)
			return err;
		t->src = pyd_core_memsrc(t->core);
		t->pid = pyd_core_pid(t->core);
		if (spec->sysroot)
			snprintf(t->source_root, sizeof t->source_root, "%s",
				 spec->sysroot);
		return PYD_OK;
	}
	t->kind = "process";
	t->pid = spec->pid;
	enum pyd_err err = PYD_OK;
	const char *odd = pyd_live_oddity(spec->pid, &err);
	if (odd) {
		snprintf(detail, detailsz, "%s", odd);
		return err;
	}
	if ((err = pyd_live_open(spec->pid, &t->live)) == PYD_E_PERM &&
	    geteuid() == 0)
		snprintf(detail, detailsz,
			 "even as root: a security module (AppArmor, SELinux, "
			 "Yama's ptrace_scope 3) or another user namespace "
			 "protects it. Run pystack-dump where the process "
			 "runs (in its container, with CAP_SYS_PTRACE)");
	if (err)
		return err;
	t->src = pyd_live_memsrc(t->live);
	snprintf(t->source_root, sizeof t->source_root, "/proc/%d/root",
		 spec->pid);
	return PYD_OK;
}

enum pyd_err target_open(const struct target_spec *spec, struct target *t,
			 char *detail, size_t detailsz)
{
	memset(t, 0, sizeof *t);
	enum pyd_err err = open_source(spec, t, detail, detailsz);
	t->inner = t->src;
	if (err || !spec->record)
		return err;
	if ((err = pyd_recorder_new(t->src, &t->rec)))
		return err;
	pyd_recorder_set_source_kind(t->rec, t->kind);
	t->src = pyd_recorder_memsrc(t->rec);
	return PYD_OK;
}

enum pyd_err target_runtime(struct target *t, struct pyd_runtime *rt,
			    char *detail, size_t detailsz)
{
	if (t->snap) {
		*rt = *pyd_snapshot_runtime(t->snap);
		return PYD_OK;
	}
	enum pyd_err err = pyd_runtime_find(t->src, t->inner, rt);
	if (err == PYD_E_NOTPYTHON && t->core)
		snprintf(detail, detailsz,
			 "no mapped file defines _PyRuntime and no 3.13+ debug "
			 "offsets are in the core's memory. If the binaries "
			 "are not where the core says, pass --exe (and "
			 "--sysroot for libraries)");
	return err;
}

void target_close(struct target *t)
{
	pyd_recorder_free(t->rec);
	pyd_snapshot_close(t->snap);
	pyd_core_close(t->core);
	pyd_live_close(t->live);
	memset(t, 0, sizeof *t);
}

struct pyd_explain target_words(const struct target_spec *spec,
				const char *prog, const char *detail)
{
	return (struct pyd_explain){
		.prog = prog,
		.shell = PYD_SHELL_CLI,
		.pid = spec->pid,
		.file = spec->core ? spec->core : spec->snapshot,
		.live = !spec->core && !spec->snapshot,
		.detail = detail,
	};
}
