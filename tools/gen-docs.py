#!/usr/bin/env python3
"""pystack-dump's man page and its bash and zsh completions, written from
the program's own help texts, so that --help is their one source:

    gen-docs.py man|bash|zsh [WRAPPER...] EXE OUTPUT

WRAPPER runs EXE where it cannot run alone (qemu, for a cross build).

EXE --help names the subcommands (its usage lines "pystack-dump WORD
[OPTIONS] ..."), and each command's --help gives its usage, its prose and
its options, laid out as

      -x, --name ARG   what it does, and
                       more lines under it

An option's value is a file where its ARG says so (FILE_ARGS), and is
one of the names EXE lists when it refuses a value it does not know
(modes, formats: the tables the option parser checks against).
"""
import re
import subprocess
import sys

PROG = "pystack-dump"

# The ARGs that name a file or a directory.
FILE_ARGS = {"FILE", "CORE", "EXE"}
DIR_ARGS = {"DIR"}

NAME_LINE = "inspect the Python stacks of CPython processes, cores and snapshots, and profile them"

SEE_ALSO = [("python3", 1), ("gdb", 1), ("lldb", 1), ("gcore", 1), ("ptrace", 2), ("proc", 5)]

OPTION = re.compile(r"^ {1,7}(?:(?P<short>-\w), )?(?P<long>--[\w-]+)"
                    r"(?: (?P<arg>[A-Z]+(?:\|[a-z]+)*)(?= |$))? *(?P<text>.*)$")
TITLE = re.compile(r"^([A-Z][\w ]*):$")


class Option:
    def __init__(self, m):
        self.short, self.long, self.arg = m["short"], m["long"], m["arg"]
        self.lines = [(m.start("text"), m["text"])]    # (column, text)
        self.choices = []

    def names(self):
        return [n for n in (self.short, self.long) if n]

    def add_line(self, line):
        text = line.lstrip()
        self.lines.append((len(line) - len(text), text))

    def is_table(self):
        """Whether its lines are laid out in columns, not running text."""
        cols = set(c for c, _ in self.lines[1:])
        return len(cols) > 1 or any("  " in t for _, t in self.lines)

    def summary(self):
        """Its text up to the first stop (a colon after a few words), without
        remarks in parentheses; its name where its text is a table."""
        if self.is_table():
            return self.long[2:]
        text = " ".join(t for _, t in self.lines)
        while re.search(r"\([^()]+\)", text):
            text = re.sub(r"\s*\([^()]+\)", "", text)
        for stop in re.finditer(r";|\. |: ", text):
            if stop[0] != ": " or len(text[:stop.start()].split()) > 3:
                return text[:stop.start()]
        return text.rstrip(".")


class Command:
    def __init__(self, name, text):
        self.name = name        # "" for pystack-dump itself
        self.usage = []         # (line, remark)
        self.prose = []         # paragraphs, each a list of lines
        self.sections = []      # (title, [Option] or lines)
        for para in text.strip("\n").split("\n\n"):
            self.add(para.split("\n"))

    def add(self, para):
        title = TITLE.match(para[0])
        if para[0].startswith("Usage: "):
            self.usage = usage_lines(para)
        elif title and OPTION.match(para[1]):
            self.sections.append((title[1], options(para[1:])))
        elif title:
            self.sections.append((title[1], para[1:]))
        else:
            self.prose.append(para)

    def options(self):
        return [o for _, body in self.sections if is_options(body) for o in body]

    def operands(self):
        """The words after [OPTIONS] in its first usage line: PID, FILE ..."""
        return self.usage[0][0].split("[OPTIONS]")[1].split()

    def launches(self):
        """Whether it runs a program given after --."""
        return any(" -- PROGRAM" in line for line, _ in self.usage)


def is_options(body):
    return bool(body) and isinstance(body[0], Option)


def usage_lines(para):
    """Each "pystack-dump ..." line, its continuation lines joined to it,
    and the remark in parentheses after it apart."""
    lines = []
    for line in para:
        if line[7:].startswith(PROG):      # after "Usage: " or as far in
            lines.append(line[7:])
        else:
            lines[-1] += " " + line.strip()
    return [split_remark(line) for line in lines]


def split_remark(line):
    """(usage, remark): a remark is in parentheses, two blanks after."""
    m = re.match(r"(.*?)(?:\s{2,}\((.*)\))?$", line)
    return m[1], m[2] or ""


def options(lines):
    opts = []
    for line in lines:
        m = OPTION.match(line)
        if m:
            opts.append(Option(m))
        else:
            opts[-1].add_line(line)
    return opts


def run(argv, check=True):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=30, check=check)


def subcommand(usage):
    """The WORD of a usage line "pystack-dump WORD ...", else None."""
    m = re.match(PROG + r" ([a-z]+) ", usage)
    return m and m[1]


def choices(exe, cmd, opt):
    """The names EXE lists refusing an unknown value of opt, else the
    lowercase words of its ARG (HZ|max: max)."""
    words = opt.arg.split("|")[1:]
    if opt.arg in FILE_ARGS | DIR_ARGS:     # a file would be opened, not refused
        return words
    argv = exe + ([cmd.name] if cmd.name else []) + [opt.long, "?"]
    m = re.search(r"unknown \w+ '\?' \(([^)]*)\)", run(argv, check=False).stderr)
    return m[1].split(", ") if m else words


def read_commands(exe):
    main = Command("", run(exe + ["--help"]).stdout)
    names = dict.fromkeys(subcommand(line) for line, _ in main.usage if subcommand(line))
    cmds = [main] + [Command(n, run(exe + [n, "--help"]).stdout) for n in names]
    for cmd in cmds:
        for opt in cmd.options():
            if opt.arg:
                opt.choices = choices(exe, cmd, opt)
    return cmds


def remarks(main):
    """Each subcommand's remark in pystack-dump --help's usage, up to its colon."""
    found = {}
    for line, remark in main.usage:
        if subcommand(line) and remark:
            found.setdefault(subcommand(line), remark.split(":")[0])
    return found


# ---- the man page ----

def roff(text):
    """text escaped for roff: its backslashes, a leading dot or quote, the
    hyphens of options as minus signs, and no line break at other hyphens."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"(?<![\w.])-[\w-]*", lambda m: m[0].replace("-", "\\-"), text)
    text = re.sub(r"(?<![\w-])(?=\w+-\w)", r"\\%", text)
    return "\\&" + text if text.startswith((".", "'")) else text


def bold(s):
    return "\\fB%s\\fR" % roff(s)


def italic(s):
    return "\\fI%s\\fR" % roff(s)


def roff_usage(line):
    """A usage line: the program, its words and options bold, the values italic."""
    return re.sub(r"-*[A-Za-z][\w-]*|--(?= |$)",
                  lambda m: italic(m[0]) if m[0].isupper() else bold(m[0]), line)


def roff_prose(paras):
    out = []
    for para in paras:
        out += [".PP"] + [roff(line.strip()) for line in para]
    return out


def roff_block(lines):
    """Lines kept as they are laid out: tables, examples, schemas."""
    margin = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return [".PP", ".RS 4", ".nf"] + [roff(line[margin:]) for line in lines] + [".fi", ".RE"]


def roff_option(opt):
    head = ", ".join(bold(n) for n in opt.names())
    out = [".TP", head + (" " + italic(opt.arg) if opt.arg else "")]
    if not opt.is_table():
        return out + [roff(text) for _, text in opt.lines]
    margin = min(c for c, _ in opt.lines)
    return out + [".nf"] + [roff(" " * (c - margin) + text) for c, text in opt.lines] + [".fi"]


def roff_sections(sections):
    out = []
    for title, body in sections:
        out.append('.SS "%s"' % title)
        if is_options(body):
            for opt in body:
                out += roff_option(opt)
        else:
            out += roff_block(body)
    return out


def exit_codes(lines):
    """{code: meaning} from the help's table, two codes to a line, a
    meaning's further lines under it."""
    codes, last = {}, None
    for line in lines:
        parts = re.split(r"(?:^|\s+)(\d+) ", line)
        if len(parts) == 1:
            codes[last] += " " + line.strip()
        for code, meaning in zip(parts[1::2], parts[2::2]):
            last = int(code)
            codes[last] = meaning.strip()
    return codes


def man_main(main):
    """pystack-dump's own help: DESCRIPTION, OPTIONS, its other sections."""
    out = [".SH DESCRIPTION"] + roff_prose(main.prose) + [".PP", "Its subcommands:"]
    for name, remark in remarks(main).items():
        out += [".TP", bold(PROG + " " + name), roff(remark)]
    out += [".SH OPTIONS"] + roff_sections(s for s in main.sections if is_options(s[1]))
    for title, body in main.sections:
        if title != "Exit status" and not is_options(body):
            out += ['.SH "%s"' % title.upper()] + roff_block(body)
    return out


def man_subcommand(cmd):
    out = ['.SH "%s %s"' % (roff(PROG.upper()), cmd.name.upper()), ".nf"]
    out += [roff_usage(line) for line, _ in cmd.usage] + [".fi"]
    return out + roff_prose(cmd.prose) + roff_sections(cmd.sections)


def man_exit_status(main):
    """EXIT STATUS: pystack-dump --help's table of exit codes."""
    codes = exit_codes(dict(main.sections)["Exit status"])
    out = [".SH EXIT STATUS"]
    for code in sorted(codes):
        out += [".TP", str(code), roff(codes[code])]
    return out


def man(cmds, version):
    main, subs = cmds[0], cmds[1:]
    out = ['.TH PYSTACK\\-DUMP 1 "" "%s" "User Commands"' % roff(version),
           ".nh", ".SH NAME", "pystack\\-dump \\- " + roff(NAME_LINE),
           ".SH SYNOPSIS", ".nf"]
    own = [line for line, _ in main.usage if not subcommand(line)]
    out += [roff_usage(line) for line in own + [u for s in subs for u, _ in s.usage]]
    out += [".fi"] + man_main(main)
    for cmd in subs:
        out += man_subcommand(cmd)
    out += man_exit_status(main)
    out += [".SH SEE ALSO", ",\n".join("%s(%d)" % (bold(name), sec) for name, sec in SEE_ALSO)]
    return "\n".join(out) + "\n"


# ---- the completions ----

def value_kind(opt):
    """How an option's value is completed: @files, @dirs, or its names."""
    if opt.arg in FILE_ARGS:
        return "@files"
    if opt.arg in DIR_ARGS:
        return "@dirs"
    return " ".join(opt.choices)


def operand_kind(cmd):
    return "@pids" if "PID" in cmd.operands() else "@files"


def key(cmd):
    return cmd.name or "main"


BASH = r'''
# PIDs of the processes whose executable or argv[0] is named python*:
# REPLY.  Their cmdlines are read with builtins, their exe links by one find.
_pystack_dump_pids()
{
	local d exe argv0
	local -A found=()
	for d in /proc/[0-9]*; do
		argv0=
		{ read -r -d '' argv0 < "$d/cmdline"; } 2>/dev/null
		[[ ${argv0##*/} == *python* ]] && found[${d#/proc/}]=1
	done
	while read -r d exe; do
		[[ ${exe##*/} == *python* ]] && found[${d#/proc/}]=1
	done < <(find /proc/[0-9]*/exe -maxdepth 0 -printf '%h %l\n' 2>/dev/null)
	REPLY="${!found[*]}"
}

# COMPREPLY: the words of $1 (@files, @dirs, @pids: those) that begin with $cur.
_pystack_dump_reply()
{
	case $1 in
	@files)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		;;
	@dirs)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		;;
	@pids)
		_pystack_dump_pids
		mapfile -t COMPREPLY < <(compgen -W "$REPLY" -- "$cur")
		;;
	*)
		mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
		;;
	esac
}

_pystack_dump()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmd=main first=1 i REPLY
	COMPREPLY=()
	if ((COMP_CWORD > 1)) && [[ " $_pystack_dump_commands " == *" ${COMP_WORDS[1]} "* ]]; then
		cmd=${COMP_WORDS[1]} first=2
	fi
	# sample -- PROGRAM ARGS...: a command, then files
	if [[ " $_pystack_dump_launchers " == *" $cmd "* ]]; then
		for ((i = first; i < COMP_CWORD; i++)); do
			[[ ${COMP_WORDS[i]} == -- ]] || continue
			if ((i + 1 == COMP_CWORD)); then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			else
				_pystack_dump_reply @files
			fi
			return
		done
	fi
	if _pystack_dump_value "$cmd" "$prev"; then
		_pystack_dump_reply "$REPLY"
	elif [[ $cur == -* ]]; then
		_pystack_dump_options "$cmd"
		_pystack_dump_reply "$REPLY"
	else
		_pystack_dump_operands "$cmd"
		_pystack_dump_reply "$REPLY"
		if ((COMP_CWORD == 1)); then
			mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(compgen -W "$_pystack_dump_commands" -- "$cur")
		fi
	fi
}

complete -F _pystack_dump pystack-dump
'''


def bash_case(fn, doc, subject, rows):
    out = ["", doc, fn + "()", "{", "\tcase %s in" % subject]
    out += ["\t%s) REPLY='%s' ;;" % (pattern, value) for pattern, value in rows]
    return out + ["\t*) return 1 ;;", "\tesac", "}"]


def bash(cmds):
    out = ["# bash completion of pystack-dump: generated by tools/gen-docs.py from",
           "# the program's --help texts.", "",
           "_pystack_dump_commands='%s'" % " ".join(c.name for c in cmds[1:]),
           "_pystack_dump_launchers='%s'" % " ".join(c.name for c in cmds if c.launches())]
    out += bash_case("_pystack_dump_options", "# REPLY: the options of command $1.", "$1",
                     [(key(c), " ".join(n for o in c.options() for n in o.names()))
                      for c in cmds])
    out += bash_case("_pystack_dump_value",
                     "# REPLY: what option $2 of command $1 takes (@files, @dirs, or the\n"
                     "# names to choose from; none: anything); fails if it takes nothing.",
                     "$1:$2",
                     [("|".join(key(c) + ":" + n for n in o.names()), value_kind(o))
                      for c in cmds for o in c.options() if o.arg])
    out += bash_case("_pystack_dump_operands", "# REPLY: what command $1's operands are.", "$1",
                     [(key(c), operand_kind(c)) for c in cmds])
    return "\n".join(out) + "\n" + BASH


ZSH = r'''
# The processes whose executable or argv[0] is named python*, with their
# command lines.
(( $+functions[_pystack-dump_pids] )) ||
_pystack-dump_pids()
{
  local d argv
  local -a pids
  for d in /proc/<->(N); do
    [[ -r $d/cmdline ]] || continue
    argv=$(<$d/cmdline) 2>/dev/null
    if [[ ${${(0)argv}[1]:t} == *python* || ${${:-$d/exe}:A:t} == *python* ]]; then
      pids+=("${d:t}:${${argv//$'\0'/ }//:/\\:}")
    fi
  done
  _describe -t pids 'Python process' pids
}

_pystack-dump()
{
  local -a commands=(__COMMANDS__)
  local ret=1 dashes
  if (( CURRENT > 2 && ${+functions[_pystack-dump_$words[2]]} )); then
    shift words
    (( CURRENT-- ))
    dashes=${words[(i)--]}
    if [[ " __LAUNCHERS__ " == *" $words[1] "* ]] && (( dashes < CURRENT )); then
      shift $dashes words
      (( CURRENT -= dashes ))
      _normal
      return
    fi
    _pystack-dump_$words[1]
    return
  fi
  (( CURRENT == 2 )) && _describe -t commands 'pystack-dump command' commands && ret=0
  _pystack-dump_main && ret=0
  return ret
}

_pystack-dump "$@"
'''


def zsh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def zsh_action(opt):
    kind = value_kind(opt)
    if kind == "@files":
        return "_files"
    if kind == "@dirs":
        return "_files -/"
    return "(%s)" % kind if kind else " "


def zsh_specs(cmd):
    specs = []
    for opt in cmd.options():
        excl = "(%s)" % " ".join(opt.names()) if opt.short else ""
        text = re.sub(r"([\[\]\\])", r"\\\1", opt.summary())
        value = ":%s:%s" % (opt.arg, zsh_action(opt)) if opt.arg else ""
        specs += [zsh_quote("%s%s[%s]%s" % (excl, n, text, value)) for n in opt.names()]
    action = "_pystack-dump_pids" if operand_kind(cmd) == "@pids" else "_files"
    specs += [zsh_quote("%d:%s:%s" % (i + 1, w, action))
              for i, w in enumerate(w for w in cmd.operands() if w.isalpha())]
    return specs


def zsh(cmds):
    out = ["#compdef pystack-dump",
           "# zsh completion of pystack-dump: generated by tools/gen-docs.py from",
           "# the program's --help texts."]
    for cmd in cmds:
        out += ["", "(( $+functions[_pystack-dump_%s] )) ||" % key(cmd),
                "_pystack-dump_%s()" % key(cmd), "{",
                "  _arguments -s : \\"]
        out += ["    %s \\" % s for s in zsh_specs(cmd)]
        out[-1] = out[-1][:-2]
        out.append("}")
    commands = " ".join(zsh_quote("%s:%s" % (n, r.replace(":", "\\:")))
                        for n, r in remarks(cmds[0]).items())
    launchers = " ".join(c.name for c in cmds if c.launches())
    return ("\n".join(out) + "\n" +
            ZSH.replace("__COMMANDS__", commands).replace("__LAUNCHERS__", launchers))


def main():
    kind, exe, output = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
    cmds = read_commands(exe)
    if kind == "man":
        text = man(cmds, run(exe + ["--version"]).stdout.strip())
    else:
        text = {"bash": bash, "zsh": zsh}[kind](cmds)
    with open(output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
