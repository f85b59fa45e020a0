/*
 * py-bt, py-tasks and py-sample inside lldb: `plugin load` this object.
 *
 * A thin shim: a memory source that reads through lldb (SBProcess), the
 * runtime's symbols as lldb resolves them (SBTarget), and core's commands
 * (frontend/commands.h) for everything else, so the output is exactly
 * pystack-dump's.  Target memory is only ever read.
 */
#include <lldb/API/LLDB.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "../frontend/source.h"
#include "../core/memsrc/coredump.h"
#include "../core/memsrc/live.h"
#include "../core/pyd.h"
#include "../frontend/commands.h"
#include "../frontend/explain.h"
}

namespace
{

/* A core file (or minidump), not a process. */
bool is_core(lldb::SBProcess &process)
{
	const char *plugin = process.GetPluginName();
	return plugin && (strstr(plugin, "core") || strstr(plugin, "minidump"));
}

/* A process on this machine: /proc/PID and process_vm_readv reach it. */
bool is_local_live(lldb::SBTarget &target, lldb::SBProcess &process)
{
	const char *platform = target.GetPlatform().GetName();
	return !is_core(process) && platform && !strcmp(platform, "host");
}

struct lldb_source {
	lldb::SBTarget target;
	lldb::SBProcess process;
	bool core;
	lldb::SBModule python; /* the module defining _PyRuntime */
	std::vector<pyd_os_thread> threads;
	std::vector<pyd_mapping> maps;
	std::vector<std::string> paths;
	bool maps_read = false;
	/* A core's own file mappings (NT_FILE), which name the files that
	 * lldb's memory regions of a core do not. */
	pyd_core *corefile = nullptr;
	/* A process on this machine, through its /proc as pystack-dump
	 * reads it: its mappings with their offsets, its files under its
	 * root (for naming native frames as pystack-dump does). */
	pyd_live *live = nullptr;
	pyd_memsrc src{};

	lldb_source(lldb::SBTarget t, lldb::SBProcess p);
	~lldb_source()
	{
		pyd_core_close(corefile);
		pyd_live_close(live);
	}
	lldb_source(const lldb_source &) = delete;
	lldb_source &operator=(const lldb_source &) = delete;
};

std::string core_path(lldb::SBProcess &process);

enum pyd_err src_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	auto *s = static_cast<lldb_source *>(ctx);
	lldb::SBError error;
	if (s->process.ReadMemory(addr, buf, len, error) == len &&
	    error.Success())
		return PYD_OK;
	/* A core leaves out what the binaries hold (Py_Version in .rodata):
	 * lldb's target reads that from the files. */
	if (s->core) {
		lldb::SBAddress at = s->target.ResolveLoadAddress(addr);
		error.Clear();
		if (at.IsValid() &&
		    s->target.ReadMemory(at, buf, len, error) == len &&
		    error.Success())
			return PYD_OK;
	}
	lldb::StateType st = s->process.GetState();
	return st == lldb::eStateExited || st == lldb::eStateDetached
	           ? PYD_E_EXITED
	           : PYD_E_READ;
}

enum pyd_err src_symbol(void *ctx, const char *name, uint64_t *addr)
{
	auto *s = static_cast<lldb_source *>(ctx);
	lldb::SBSymbolContextList found = s->target.FindSymbols(name);
	for (uint32_t i = 0; i < found.GetSize(); i++) {
		lldb::SBSymbolContext sc = found.GetContextAtIndex(i);
		lldb::addr_t a =
		    sc.GetSymbol().GetStartAddress().GetLoadAddress(s->target);
		if (a != LLDB_INVALID_ADDRESS && a) {
			*addr = a;
			if (!strcmp(name, "_PyRuntime") ||
			    (!strcmp(name, "_PyThreadState_Current") &&
			     !s->python.IsValid()))
				s->python = sc.GetModule();
			return PYD_OK;
		}
	}
	return PYD_E_NOTPYTHON;
}

enum pyd_err src_threads(void *ctx, const pyd_os_thread **out, size_t *n)
{
	auto *s = static_cast<lldb_source *>(ctx);
	s->threads.clear();
	for (uint32_t i = 0; i < s->process.GetNumThreads(); i++) {
		lldb::SBThread th = s->process.GetThreadAtIndex(i);
		pyd_os_thread t{};
		t.tid = (int64_t)th.GetThreadID();
		/* lldb holds every thread of a live process stopped.  A core
		 * says neither what its threads were doing nor their names
		 * (lldb gives its main thread the program's). */
		const char *name = s->core ? nullptr : th.GetName();
		if (name)
			snprintf(t.name, sizeof t.name, "%s", name);
		t.run = s->core ? PYD_RUN_UNKNOWN : PYD_RUN_IDLE;
		s->threads.push_back(t);
	}
	*out = s->threads.data();
	*n = s->threads.size();
	return PYD_OK;
}

/* A core's mappings as the core itself lists them, with the files'
 * names: how the _asyncio module (3.14) is found when lldb did not load
 * it (a chroot's, or a core from elsewhere).  false if it cannot be read. */
bool core_mappings(lldb_source *s, const pyd_mapping **out, size_t *n)
{
	char detail[256];
	pyd_core_opts opts{};
	std::string path = core_path(s->process);
	if (!s->corefile && !path.empty() &&
	    pyd_core_open(path.c_str(), &opts, &s->corefile, detail,
	                  sizeof detail) != PYD_OK)
		s->corefile = nullptr;
	const pyd_memsrc *c =
	    s->corefile ? pyd_core_memsrc(s->corefile) : nullptr;
	return c && c->mappings(c->ctx, out, n) == PYD_OK;
}

/* lldb's memory regions, for the 3.13+ cookie scan and the _asyncio
 * module's block: there are no file offsets or inodes in them. */
enum pyd_err src_mappings(void *ctx, const pyd_mapping **out, size_t *n)
{
	auto *s = static_cast<lldb_source *>(ctx);
	if (s->core && core_mappings(s, out, n))
		return PYD_OK;
	if (s->live) {
		const pyd_memsrc *l = pyd_live_memsrc(s->live);
		return l->mappings(l->ctx, out, n);
	}
	if (!s->maps_read) {
		s->maps_read = true;
		lldb::SBMemoryRegionInfoList regions =
		    s->process.GetMemoryRegions();
		lldb::SBMemoryRegionInfo r;
		for (uint32_t i = 0; i < regions.GetSize(); i++) {
			if (!regions.GetMemoryRegionAtIndex(i, r) ||
			    !r.IsMapped())
				continue;
			const char *name = r.GetName();
			s->paths.emplace_back(name && name[0] == '/' ? name
			                                             : "");
			pyd_mapping m{};
			m.start = r.GetRegionBase();
			m.end = r.GetRegionEnd();
			snprintf(m.perms, sizeof m.perms, "%c%c%cp",
			         r.IsReadable() ? 'r' : '-',
			         r.IsWritable() ? 'w' : '-',
			         r.IsExecutable() ? 'x' : '-');
			s->maps.push_back(m);
		}
		for (size_t i = 0; i < s->maps.size(); i++)
			if (!s->paths[i].empty())
				s->maps[i].path = &s->paths[i][0];
	}
	*out = s->maps.data();
	*n = s->maps.size();
	return PYD_OK;
}

/* A file the target maps (one of src_mappings'), opened where the core's
 * or the process's source finds it. */
int src_open_file(void *ctx, const pyd_mapping *m, char *used, size_t usedsz)
{
	auto *s = static_cast<lldb_source *>(ctx);
	const pyd_memsrc *from = s->live       ? pyd_live_memsrc(s->live)
	                         : s->corefile ? pyd_core_memsrc(s->corefile)
	                                       : nullptr;
	return from && from->open_file
	           ? from->open_file(from->ctx, m, used, usedsz)
	           : -1;
}

lldb_source::lldb_source(lldb::SBTarget t, lldb::SBProcess p)
    : target(t), process(p), core(is_core(p))
{
	if (is_local_live(t, p) &&
	    pyd_live_open((int)p.GetProcessID(), &live) != PYD_OK)
		live = nullptr;
	src.ctx = this;
	src.read = src_read;
	src.symbol = src_symbol;
	src.threads = src_threads;
	src.mappings = src_mappings;
	src.open_file = src_open_file;
}

void module_path(lldb::SBModule &mod, char *out, size_t outsz)
{
	char path[PATH_MAX];
	if (!mod.IsValid() || !mod.GetFileSpec().GetPath(path, sizeof path))
		return;
	char real[PATH_MAX];
	snprintf(out, outsz, "%s", realpath(path, real) ? real : path);
}

/* Before 3.11 the version is only a string in the binary's .rodata. */
void lldb_scan_version(lldb::SBModule &mod, pyd_runtime *rt)
{
	lldb::SBData data = mod.FindSection(".rodata").GetSectionData();
	std::vector<char> bytes(data.GetByteSize());
	lldb::SBError error;
	if (!bytes.empty() && data.ReadRawData(error, 0, bytes.data(),
	                                       bytes.size()) == bytes.size())
		pyd_runtime_scan_version(bytes.data(), bytes.size(),
		                         rt->version, sizeof rt->version);
}

/* 3.14+: the _asyncio module's debug offsets, in a section of their own
 * in the module or (built in) in the interpreter's binary. */
uint64_t asyncio_section(lldb::SBTarget &target)
{
	for (uint32_t i = 0; i < target.GetNumModules(); i++) {
		lldb::SBSection sec =
		    target.GetModuleAtIndex(i).FindSection(".AsyncioDebug");
		lldb::addr_t a = sec.IsValid() ? sec.GetLoadAddress(target)
		                               : LLDB_INVALID_ADDRESS;
		if (a != LLDB_INVALID_ADDRESS)
			return a;
	}
	return 0;
}

/*
 * Where the interpreter is: core's one answer (pyd_runtime_find asks
 * lldb's symbols first, src_symbol), then what only lldb adds when its
 * symbols found it: the module's file, its version (in .rodata before
 * 3.11) and, when the files did not give it, the _asyncio section among
 * the modules lldb loaded.
 */
bool lldb_find_runtime(lldb_source &s, pyd_runtime *rt)
{
	if (pyd_runtime_find(&s.src, &s.src, rt) != PYD_OK)
		return false;
	if (s.python.IsValid()) {
		module_path(s.python, rt->binary, sizeof rt->binary);
		if (!rt->py_version_addr)
			lldb_scan_version(s.python, rt);
		pyd_parse_version(rt->version, &rt->major, &rt->minor);
	}
	if (!rt->asyncio_debug_addr)
		rt->asyncio_debug_addr = asyncio_section(s.target);
	return true;
}

#ifndef PYD_LLDB_HAS_CORE_FILE
/* An ELF core, by its header. */
bool is_elf_core(const char *path)
{
	unsigned char h[18];
	FILE *f = fopen(path, "rb");
	bool core = f && fread(h, 1, sizeof h, f) == sizeof h &&
	            !memcmp(h, "\177ELF", 4) && h[5] == 1 && h[16] == 4;
	if (f)
		fclose(f);
	return core;
}
#endif

/*
 * The core file's path.  lldb 17 tells; lldb 16 does not, but it maps
 * the core into its own memory, so on Linux it is the one ELF core among
 * the files it has mapped (when a single core is open).
 */
std::string core_path(lldb::SBProcess &process)
{
	std::string found;
#ifdef PYD_LLDB_HAS_CORE_FILE
	char path[PATH_MAX];
	if (process.GetCoreFile().GetPath(path, sizeof path))
		found = path;
#elif defined(__linux__)
	(void)process;
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	while (maps && fgets(line, sizeof line, maps)) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, "\n")] = 0;
		if (found == path || !is_elf_core(path))
			continue;
		if (!found.empty()) {
			found.clear();
			break;
		}
		found = path;
	}
	if (maps)
		fclose(maps);
#else
	(void)process;
#endif
	return found;
}

/* As pystack-dump says it: "Process 1234", "Core file core.1234
 * (process 1234)". */
void origin_of(lldb_source &s, char *out, size_t outsz)
{
	unsigned long long pid = s.process.GetProcessID();
	std::string core = s.core ? core_path(s.process) : "";
	if (!s.core)
		snprintf(out, outsz, "Process %llu", pid);
	else if (core.empty())
		snprintf(out, outsz, "Core file (process %llu)", pid);
	else
		snprintf(out, outsz, "Core file %s (process %llu)",
		         core.c_str(), pid);
}

std::string join(char **args)
{
	std::string s;
	for (; args && *args; args++)
		s.append(s.empty() ? "" : " ").append(*args);
	return s;
}

/* The buffer's text without its last newline (SetError adds one). */
std::string text_of(const pyd_buf &b)
{
	std::string s(b.data ? b.data : "", b.len);
	while (!s.empty() && s.back() == '\n')
		s.pop_back();
	return s;
}

/* py-bt -n: the thread's native frames as lldb unwinds them, innermost
 * first, and each one's index in lldb's list; lldb keeps the names for as
 * long as the debugger lives.  The frames lldb makes up from call-site
 * information (tail calls: "artificial") are left out, as pystack-dump's
 * unwinder does not make them up. */
void native_frames(lldb::SBThread thread, std::vector<pyd_native_frame> &out,
                   std::vector<uint32_t> &index)
{
	/* lldb gives a function inlined into another the address of its
	 * call site: the frames of one stack frame (one CFA: the real one and
	 * those inlined into it) all take the innermost's pc, as gdb's (and
	 * pyd_native_name) do. */
	uint64_t run_pc = 0, run_cfa = 0;
	for (uint32_t i = 0; i < thread.GetNumFrames(); i++) {
		lldb::SBFrame f = thread.GetFrameAtIndex(i);
		if (f.IsArtificial())
			continue;
		if (out.empty() || f.GetCFA() != run_cfa) {
			run_pc = f.GetPC();
			run_cfa = f.GetCFA();
		}
		pyd_native_frame nf{};
		nf.pc = run_pc;
		nf.function = f.GetFunctionName();
		out.push_back(nf);
		index.push_back(i);
	}
}

/* The message table's words for why prog cannot run, as the command's
 * error; false. */
bool refuse(lldb::SBCommandReturnObject &result, const char *prog,
            pyd_say why, const char *file = nullptr,
            const char *detail = nullptr)
{
	pyd_buf b{};
	pyd_explain_debugger_say(&b, prog, why, file, detail);
	result.SetError(b.failed ? "out of memory" : text_of(b).c_str());
	pyd_buf_free(&b);
	return false;
}

bool usable(lldb::SBProcess &process, const char *name,
            lldb::SBCommandReturnObject &result)
{
	lldb::StateType st =
	    process.IsValid() ? process.GetState() : lldb::eStateInvalid;
	if (st == lldb::eStateStopped || st == lldb::eStateCrashed ||
	    st == lldb::eStateSuspended)
		return true;
	return refuse(result, name,
	              st == lldb::eStateRunning || st == lldb::eStateStepping
	                  ? PYD_SAY_NOT_STOPPED
	                  : PYD_SAY_NO_TARGET);
}

/* The Python frame py-up and py-down selected, for the next command. */
pyd_py_selection selection = {0, 0, -1};

class bt_command : public lldb::SBCommandPluginInterface
{
	const char *name;

      public:
	explicit bt_command(const char *n) : name(n)
	{
	}

	bool DoExecute(lldb::SBDebugger debugger, char **args,
	               lldb::SBCommandReturnObject &result) override
	{
		pyd_cmd cmd;
		char err[256];
		if (!pyd_cmd_parse(name, join(args).c_str(), &cmd, err,
		                   sizeof err)) {
			result.SetError(err);
			return false;
		}
		lldb::SBTarget target = debugger.GetSelectedTarget();
		lldb::SBProcess process = target.GetProcess();
		if (!usable(process, name, result))
			return false;
		lldb_source s(target, process);
		pyd_runtime rt;
		char origin[PATH_MAX + 64], root[64] = "";
		origin_of(s, origin, sizeof origin);
		if (is_local_live(target, process))
			snprintf(root, sizeof root, "/proc/%llu/root",
			         (unsigned long long)process.GetProcessID());
		source_cache *sources = source_cache_new(root[0] ? root : NULL);
		pyd_cmd_target t{};
		t.src = &s.src;
		t.rt = lldb_find_runtime(s, &rt) ? &rt : nullptr;
		t.pid = (int)process.GetProcessID();
		t.origin = origin;
		t.source_kind = s.core ? "core" : "process";
		t.selected_tid =
		    (int64_t)process.GetSelectedThread().GetThreadID();
		t.source_line = source_cache_line;
		t.source_ctx = sources;
		t.sel = &selection;
		std::vector<pyd_native_frame> native;
		std::vector<uint32_t> index;
		lldb::SBThread thread = process.GetSelectedThread();
		if (pyd_cmd_wants_native(&cmd))
			native_frames(thread, native, index);
		t.native = native.data();
		t.nnative = native.size();
		pyd_buf out{};
		selection.native = -1;
		enum pyd_err e = pyd_cmd_run(&cmd, &t, &out);
		source_cache_free(sources);
		if (selection.native >= 0 &&
		    (size_t)selection.native < index.size())
			thread.SetSelectedFrame(index[(size_t)selection.native]);
		bool ok = !pyd_err_fatal(e) && !out.failed;
		if (ok) {
			result.Printf("%.*s", (int)out.len,
			              out.data ? out.data : "");
			result.SetStatus(
			    lldb::eReturnStatusSuccessFinishResult);
		} else {
			result.SetError(out.failed ? "out of memory"
			                           : text_of(out).c_str());
		}
		pyd_buf_free(&out);
		return ok;
	}
};

/* Let the inferior run for py-sample: asynchronously, so lldb hands
 * control back at once, and stop it the same way. */
struct runner {
	lldb::SBDebugger debugger;
	lldb::SBProcess process;
	bool was_async;
};

/* Wait (up to 5 s) until done(the process's state); true if it came. */
bool wait_state(lldb::SBProcess &process, bool (*done)(lldb::StateType))
{
	for (int i = 0; i < 500; i++) {
		if (done(process.GetState()))
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return done(process.GetState());
}

bool running_or_gone(lldb::StateType st)
{
	return st == lldb::eStateRunning || st == lldb::eStateExited ||
	       st == lldb::eStateDetached;
}

bool stopped_or_gone(lldb::StateType st)
{
	return st == lldb::eStateStopped || st == lldb::eStateExited ||
	       st == lldb::eStateDetached;
}

/*
 * Continue returns before lldb counts the process as running, and a Stop
 * in between finds it "stopped" and does nothing, leaving it running:
 * wait until it runs.
 */
enum pyd_err resume(void *ctx)
{
	auto *r = static_cast<runner *>(ctx);
	r->was_async = r->debugger.GetAsync();
	r->debugger.SetAsync(true);
	if (r->process.Continue().Success() &&
	    wait_state(r->process, running_or_gone))
		return PYD_OK;
	r->process.Stop();
	r->debugger.SetAsync(r->was_async);
	return PYD_E_READ;
}

bool interrupted(void *ctx)
{
	auto *r = static_cast<runner *>(ctx);
	return r->debugger.GetCommandInterpreter().WasInterrupted();
}

enum pyd_err stop(void *ctx)
{
	auto *r = static_cast<runner *>(ctx);
	if (r->process.GetState() == lldb::eStateRunning)
		r->process.Stop();
	bool stopped = wait_state(r->process, stopped_or_gone);
	r->debugger.SetAsync(r->was_async);
	return stopped ? PYD_OK : PYD_E_READ;
}

/*
 * lldb's pid names a process of this machine only if lldb debugs one
 * here: a remote target's pid may be another local process, even one of
 * the same program.  Both must read the same runtime state, which holds
 * heap pointers no two processes share.
 */
bool same_process(lldb_source &s, const pyd_runtime &rt, const pyd_memsrc *live)
{
	uint64_t at =
	    rt.runtime_addr ? rt.runtime_addr : rt.tstate_current_addr;
	unsigned char a[4096], b[4096];
	for (size_t n = sizeof a; n >= 8; n /= 2)
		if (pyd_read(&s.src, at, a, n) == PYD_OK)
			return pyd_read(live, at, b, n) == PYD_OK &&
			       !memcmp(a, b, n);
	return false;
}

bool write_file(const char *path, const pyd_buf &b, std::string &why)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && (!b.len || fwrite(b.data, 1, b.len, f) == b.len);
	if (f)
		ok &= fclose(f) == 0;
	if (!ok) {
		pyd_buf b{};
		pyd_explain_debugger_say(&b, "py-sample", PYD_SAY_CANNOT_WRITE,
		                         path, strerror(errno));
		why = b.failed ? "out of memory" : text_of(b);
		pyd_buf_free(&b);
	}
	return ok;
}

class sample_command : public lldb::SBCommandPluginInterface
{
      public:
	bool DoExecute(lldb::SBDebugger debugger, char **args,
	               lldb::SBCommandReturnObject &result) override
	{
		pyd_cmd cmd;
		char err[256];
		if (!pyd_cmd_parse("py-sample", join(args).c_str(), &cmd, err,
		                   sizeof err)) {
			result.SetError(err);
			return false;
		}
		lldb::SBTarget target = debugger.GetSelectedTarget();
		lldb::SBProcess process = target.GetProcess();
		if (!usable(process, "py-sample", result))
			return false;
		if (!is_local_live(target, process))
			return refuse(result, "py-sample",
			              is_core(process) ? PYD_SAY_SAMPLE_ON_CORE
			                               : PYD_SAY_SAMPLE_REMOTE);
		lldb_source s(target, process);
		pyd_runtime rt;
		if (!lldb_find_runtime(s, &rt)) {
			pyd_buf why{};
			pyd_explain_debugger(&why, "py-sample", PYD_E_NOTPYTHON,
			                     "");
			result.SetError(text_of(why).c_str());
			pyd_buf_free(&why);
			return false;
		}
		/* lldb cannot read a process it lets run: sample through
		 * /proc and process_vm_readv, which work under its ptrace. */
		int pid = (int)process.GetProcessID();
		pyd_live *live = nullptr;
		if (pyd_live_open(pid, &live))
			return refuse(result, "py-sample",
			              PYD_SAY_SAMPLE_NO_PROC);
		/* A remote target's pid that names a local process too. */
		if (!same_process(s, rt, pyd_live_memsrc(live))) {
			pyd_live_close(live);
			return refuse(result, "py-sample",
			              PYD_SAY_SAMPLE_REMOTE);
		}
		pyd_cmd_target t{};
		t.src = pyd_live_memsrc(live);
		t.rt = &rt;
		t.pid = pid;
		runner r{debugger, process, false};
		pyd_cmd_resume hooks{&r, resume, stop, interrupted};
		pyd_buf report{}, msg{};
		enum pyd_err e =
		    pyd_cmd_sample(&cmd, &t, &hooks, &report, &msg);
		pyd_live_close(live);
		std::string why;
		const char *output = cmd.opt.output;
		bool ok = !e && !report.failed && !msg.failed &&
		          (!output || write_file(output, report, why));
		if (ok) {
			if (!output)
				result.Printf("%.*s", (int)report.len,
				              report.data ? report.data : "");
			result.Printf("%.*s", (int)msg.len,
			              msg.data ? msg.data : "");
			result.SetStatus(
			    lldb::eReturnStatusSuccessFinishResult);
		} else {
			if (why.empty())
				why = report.failed || msg.failed
				          ? "out of memory"
				          : text_of(msg);
			result.SetError(why.c_str());
		}
		pyd_buf_free(&report);
		pyd_buf_free(&msg);
		return ok;
	}
};

bool loaded;

/*
 * core's help reads "SYNTAX: what it does.\nDETAILS": lldb shows the
 * part after the colon in its command list and all of it, under a
 * Syntax line of its own, for help py-bt.
 */
void add(lldb::SBCommandInterpreter &interp, const char *name,
         lldb::SBCommandPluginInterface *impl)
{
	std::string help = pyd_cmd_help(name), syntax;
	size_t colon = help.find(": ");
	for (char ch : help.substr(0, colon))
		if (!isspace((unsigned char)ch) ||
		    (!syntax.empty() && syntax.back() != ' '))
			syntax += isspace((unsigned char)ch) ? ' ' : ch;
	size_t from = colon == std::string::npos ? 0 : colon + 2;
	std::string brief = help.substr(from, help.find('\n', from) - from);
	lldb::SBCommand c =
	    interp.AddCommand(name, impl, brief.c_str(), syntax.c_str());
	c.SetHelpLong(help.c_str());
}

} // namespace

namespace lldb
{
bool PluginInitialize(lldb::SBDebugger debugger);
}

/* lldb calls this again when the plugin is loaded again: the commands
 * are there already, say so and keep them. */
bool lldb::PluginInitialize(lldb::SBDebugger debugger)
{
	if (loaded) {
		std::string names;
		const char *n;
		for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
			names += std::string(i ? ", " : "") + n;
		fprintf(debugger.GetErrorFileHandle(),
		        "pystack-dump: the lldb plugin is already loaded "
		        "(%s).\n",
		        names.c_str());
		return true;
	}
	lldb::SBCommandInterpreter interp = debugger.GetCommandInterpreter();
	const char *n;
	for (size_t i = 0; (n = pyd_cmd_nth(i)); i++)
		add(interp, n,
		    strcmp(n, "py-sample")
		        ? static_cast<lldb::SBCommandPluginInterface *>(
		              new bt_command(n))
		        : new sample_command());
	loaded = true;
	return true;
}
