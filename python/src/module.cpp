// wgml._wgml: the C++ core for the Python package wgml (python/wgml, docs/python.md).
#include "bindings.h"

NB_MODULE(_wgml, m) {
  m.doc() = "wgml's C++ core; use the wgml package, which wraps it.";
  wgml::python::register_error_translator();
  wgml::python::bind_session(m);
  wgml::python::bind_generation(m);
}
