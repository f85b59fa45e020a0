/*
 * Bytecode offset -> source line, for each line-table format CPython used.
 * Pure functions over bytes copied out of the target: they trust nothing in
 * the table, never read past its end, and return -1 when the offset has no
 * line (or the table is malformed where it matters).
 */
#ifndef PYD_LINETABLE_H
#define PYD_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* <= 3.9: co_lnotab; lasti is f_lasti, a byte offset. */
int pyd_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, int lasti);

/* 3.10: co_linetable; offset in bytes (f_lasti * 2). */
int pyd_line_310(const uint8_t *tab, size_t len, int firstlineno, int offset);

/* 3.11+: the PEP 657 location table; offset in bytes from the start of
 * the bytecode. */
int pyd_line_locations(const uint8_t *tab, size_t len, int firstlineno,
		       int offset);

#endif
