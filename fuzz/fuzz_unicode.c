/*
 * libFuzzer: a str's bytes in each of its kinds (1, 2, 4 bytes a
 * character) to UTF-8, into a small and a large buffer, and the UTF-8
 * repair of whatever bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/decode/unicode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char small[16], big[4096];
	for (unsigned kind = 1; kind <= 4; kind *= 2) {
		pyd_str_to_utf8(data, size / kind, kind, small, sizeof small);
		pyd_str_to_utf8(data, size / kind, kind, big, sizeof big);
	}
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	pyd_utf8_repair(s);
	free(s);
	return 0;
}
