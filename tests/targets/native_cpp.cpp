// C++ between Python frames, for native.py's "cpp" thread (compiled by
// tests/test_native.py with g++ -O0, so each function keeps a frame of its
// own): a function in a namespace, one of two overloads, and a member of a
// class template, whose symbols are mangled (_ZN3pyd5relayEPFiiEi, ...).
namespace pyd {

using callback = int (*)(int);

int relay(callback cb, int x)
{
	return cb(x) + 1;
}

int relay(callback cb, double x)
{
	return cb(static_cast<int>(x));
}

template <typename T> struct Outer {
	static int through(callback cb, T x)
	{
		return relay(cb, x);
	}
};

} // namespace pyd

extern "C" int pyd_cpp_call(pyd::callback cb, int x)
{
	return pyd::Outer<int>::through(cb, x);
}
