/*
 * libFuzzer: the gdb plugin's parser of the request its command file
 * writes (commands, words, mappings, threads, gdb's backtrace).
 */
#include <stdlib.h>
#include <string.h>

#include "../gdb-plugin/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct gdb_request r;
	gdb_request_parse(text, &r); /* the request takes text */
	gdb_request_free(&r);
	return 0;
}
