#pragma once
// The pieces of the extension module wgml._wgml. The Python package (python/wgml) wraps it: feeds
// by name, numpy dtypes, bfloat16, iterators; here is only what must be C++.
#include <nanobind/nanobind.h>

#include <memory>
#include <mutex>

#include "wgml/session.h"

namespace wgml::python {

namespace nb = nanobind;

// A Session and the lock that makes it safe to share between Python threads: run() releases the
// GIL, so two threads may call it at once; they take turns here.
struct SessionHandle {
  Session session;
  std::mutex mutex;
};

// f(session) without the GIL, holding the session's lock. The lock is only ever taken without the
// GIL: a generation callback takes the GIL while its thread holds the lock.
template <class F>
auto with_session(SessionHandle& handle, F&& f) {
  nb::gil_scoped_release released;
  std::lock_guard<std::mutex> lock(handle.mutex);
  return f(handle.session);
}

// wgml::Error -> the wgml.errors class of its code (raised with the message and the code name).
void register_error_translator();

// A program input from Python: (dtype name, shape, the bytes as a flat uint8 array), an int, a
// float or a bool.
Value value_from_python(nb::handle item);
// Call before value_to_python, without the GIL: reads a tensor's bytes back from the device and
// makes them the tensor's own, so that numpy may write to them.
void materialize(Value& value);
// A program output for Python: (dtype name, numpy array) for a tensor (bfloat16 as its uint16
// bits), else an int, float or bool. The array takes over the tensor's storage.
nb::object value_to_python(Value&& value);

void bind_session(nb::module_& m);
void bind_generation(nb::module_& m);

}  // namespace wgml::python
