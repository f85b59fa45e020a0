#include "pyd_error.h"

const char *pyd_strerror(enum pyd_err err)
{
	switch (err) {
	case PYD_OK:
		return "success";
	case PYD_E_USAGE:
		return "bad usage";
	case PYD_E_NOPROC:
		return "no such process";
	case PYD_E_PERM:
		return "permission denied";
	case PYD_E_NOTPYTHON:
		return "not a Python process";
	case PYD_E_UNSUPPORTED:
		return "unsupported Python version";
	case PYD_E_EXITED:
		return "process exited during the read";
	case PYD_E_TORN:
		return "stack kept changing during the read";
	case PYD_E_READ:
		return "memory could not be read";
	case PYD_E_NOMEM:
		return "out of memory";
	case PYD_E_NOTCORE:
		return "not an ELF core file";
	case PYD_E_FOREIGN:
		return "core file of another architecture";
	case PYD_E_TRUNCATED:
		return "core file truncated";
	case PYD_E_SNAPSHOT:
		return "bad or unsupported snapshot file";
	case PYD_E_EXEMISMATCH:
		return "executable does not match the core";
	case PYD_E_PROFILE:
		return "bad or unsupported profile or recording";
	case PYD_E_WRITE:
		return "output file cannot be written";
	case PYD_E_NOCOREDUMP:
		return "no kept core matches";
	}
	return "unknown error";
}
