#include <exception>

#include "bindings.h"
#include "wgml/error.h"

namespace wgml::python {

void register_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      const char* code = error_code_name(e.code());
      nb::object cls = nb::module_::import_("wgml.errors").attr("error_class")(code);
      nb::object instance = cls(e.what(), code);
      PyErr_SetObject(cls.ptr(), instance.ptr());
    }
  });
}

}  // namespace wgml::python
