/*
 * What the fuzz harnesses share: their input as a file (the readers take
 * paths), and the whole decoding pipeline over a memory source.
 */
#ifndef PYD_FUZZ_PIPELINE_H
#define PYD_FUZZ_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/memsrc/memsrc.h"
#include "../core/pyd.h"

/* data written to a file of this process's own (rewritten each call);
 * its path. */
const char *fuzz_file(const uint8_t *data, size_t size);

/* Everything a dump does with a target: a session, every thread's stack,
 * the locals, the task graph, text and JSON reports. */
void fuzz_pipeline(const struct pyd_memsrc *src, const struct pyd_runtime *rt);

#endif
