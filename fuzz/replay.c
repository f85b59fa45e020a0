/*
 * The harnesses without libFuzzer: each file named (or each file in each
 * directory named) is passed to LLVMFuzzerTestOneInput once.  The test
 * suite replays the seed corpora and every kept crash reproducer
 * (tests/fuzz/TARGET/) this way, in the ordinary and the sanitizer build.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			uint8_t *p = realloc(buf, cap);
			if (!p) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = p;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (!got)
			break;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int run_path(const char *path, unsigned *count)
{
	struct stat st;
	if (stat(path, &st)) {
		perror(path);
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		++*count;
		return run_file(path);
	}
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort), bad = 0;
	for (int i = 0; i < n; i++) {
		char sub[4096];
		if (names[i]->d_name[0] != '.') {
			snprintf(sub, sizeof sub, "%s/%s", path, names[i]->d_name);
			bad |= run_path(sub, count);
		}
		free(names[i]);
	}
	free(names);
	return n < 0 || bad;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int bad = 0;
	for (int i = 1; i < argc; i++)
		bad |= run_path(argv[i], &count);
	printf("%s: %u inputs replayed\n", argv[0], count);
	return bad;
}
