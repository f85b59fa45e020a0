/*
 * libFuzzer: the three line-table decoders (and their varints) on any
 * bytes, at offsets taken from the input's first bytes.
 */
#include <string.h>

#include "../core/decode/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first = 0, offset = 0;
	if (size < 8)
		return 0;
	memcpy(&first, data, 4);
	memcpy(&offset, data + 4, 4);
	data += 8;
	size -= 8;
	pyd_line_lnotab(data, size, first, offset);
	pyd_line_310(data, size, first, offset);
	pyd_line_locations(data, size, first, offset);
	return 0;
}
