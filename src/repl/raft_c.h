#pragma once
// cowsql raft's C header, made includable from C++: its ABI checks are static asserts on
// sizeof(struct {...}), which C allows and C++ rejects. They check the library's own build,
// so here they are compiled out; and it has no extern "C" of its own. Include this, never
// <raft.h> directly.
#pragma push_macro("__cpp_static_assert")
#undef __cpp_static_assert
#define _Static_assert(...)
extern "C" {
#include <raft.h>
}
#undef _Static_assert
#pragma pop_macro("__cpp_static_assert")
