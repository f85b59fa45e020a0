"""How the tests start gdb and lldb: in batch mode, with no init file of
this machine's, and with the debugger's own symbol-index cache on.

A debugger attaching to a target reads the DWARF of its libpython (30 MB
in a pyenv build) to index its symbols: about half of a short session's
time, and the same work for every one of the hundreds of sessions a run
starts on the same few libraries.  Both debuggers can keep that index,
by build ID, in a directory (gdb's `index-cache`, lldb's
`symbols.enable-lldb-index-cache`); what a command prints is the same
with or without it.  The first session on each library writes it, every
later one reads it (tests/README.md, "CI": what it saves)."""

INDEX_DIR = "/tmp/pyd-debugger-index"
LLDB = "lldb-16"


def gdb_argv(program="gdb"):
    """gdb (or gdb-multiarch) in batch mode, ready for -p/-c and -ex."""
    return [program, "-batch", "-nx", "-iex", "set auto-load off",
            "-iex", "set index-cache directory " + INDEX_DIR,
            "-iex", "set index-cache enabled on"]


def lldb_argv(program=(LLDB,)):
    """lldb (program: its argv, e.g. under qemu) in batch mode, ready for
    -o, -p and -c."""
    return list(program) + ["-b",
                            "-O", "settings set symbols.lldb-index-cache-path " + INDEX_DIR,
                            "-O", "settings set symbols.enable-lldb-index-cache true"]

