/*
 * The shell side of the command file's steps (gen_gdb.c): functions that
 * the reader leaves in gdb's environment (PYD_GDB_SH_ENV, request.h),
 * which each `pipe` or `shell` of the command file evaluates and calls.
 *
 * gdb reads a command file one byte at a time, each byte a read and a
 * select, so every byte of it costs at start-up; the shell text, once
 * spelled out in every step and every count of words, now lives here.
 */
#ifndef PYD_GDB_SHELL_H
#define PYD_GDB_SHELL_H

#include "buf.h"

/* Append the shell functions to out:
 *   pyd_request  read a request on stdin and write it; exits 0 when the
 *                command wants the native frames (py-bt -n, py-up ...),
 *                whose `bt` is then added, 4 when the target is not a
 *                local process, whose `info proc mappings` is then added
 *                (5: and then the `bt`), 3 when the reader did not take
 *                the last request (load it again), 2 on an error, else 1
 *   pyd_add NAME [DONE]  add gdb's output (stdin) to the request under
 *                @NAME, and with DONE hand the request in
 *   pyd_sample   start py-sample's script; exits 1 if there is none
 *   pyd_sampled  print what py-sample's script left
 *   pyd_select   exit with the native frame to select, 255 if none */
void gdb_shell_functions(struct pyd_buf *out);

#endif
