#include "frontend/pte/pte_file.h"

#include <cstring>

#include "frontend/pte/executorch_program_generated.h"
#include "wgml/error.h"

namespace wgml::frontend {
namespace {

namespace et = executorch_flatbuffer;

constexpr size_t kIdentifierOffset = 4;
constexpr size_t kExtendedHeaderOffset = 8;
constexpr uint32_t kExtendedHeaderMinLength = 24;

[[noreturn]] void fail(ErrorCode code, const std::string& path, const std::string& msg) { throw Error(code, path + ": " + msg); }

struct ExtendedHeader {
  uint64_t program_size = 0;
  uint64_t segment_base_offset = 0;
};

// The extended header is optional: older files have none, and then the FlatBuffer is the file.
ExtendedHeader read_extended_header(const io::ByteView& file, const std::string& path) {
  ExtendedHeader h{file.size, 0};
  const uint8_t* p = file.data + kExtendedHeaderOffset;
  if (file.size < kExtendedHeaderOffset + 8 || std::memcmp(p, "eh00", 4) != 0) return h;
  const uint32_t length = io::read_u32_le(p + 4);
  if (length < kExtendedHeaderMinLength || !file.contains(kExtendedHeaderOffset, length))
    fail(ErrorCode::InvalidFormat, path,
         "byte 12: extended header length " + std::to_string(length) + " must be at least 24 and fit in the file");
  h.program_size = io::read_u64_le(p + 8);
  h.segment_base_offset = io::read_u64_le(p + 16);
  if (h.program_size < kExtendedHeaderOffset + length || h.program_size > file.size)
    fail(ErrorCode::InvalidFormat, path,
         "byte 16: program size " + std::to_string(h.program_size) + " must cover the header and fit in the " +
             std::to_string(file.size) + "-byte file");
  if (h.segment_base_offset != 0 && (h.segment_base_offset < h.program_size || h.segment_base_offset > file.size))
    fail(ErrorCode::InvalidFormat, path,
         "byte 24: segment base offset " + std::to_string(h.segment_base_offset) +
             " must lie between the end of the program and the end of the file");
  return h;
}

io::ByteView segment_bytes(const et::Program& program, uint32_t index, const ExtendedHeader& h, const io::ByteView& file,
                           const std::string& path, const std::string& what) {
  const auto* segments = program.segments();
  if (!segments || index >= segments->size())
    fail(ErrorCode::InvalidFormat, path,
         what + ": segment index " + std::to_string(index) + " out of range (the program has " +
             std::to_string(segments ? segments->size() : 0) + " segments)");
  const auto* seg = segments->Get(index);
  if (h.segment_base_offset == 0) fail(ErrorCode::InvalidFormat, path, what + ": refers to a segment, but the file has none");
  const uint64_t begin = h.segment_base_offset + seg->offset();
  if (seg->offset() > file.size || !file.contains(begin, seg->size()))
    fail(ErrorCode::InvalidFormat, path,
         what + ": segment " + std::to_string(index) + " [" + std::to_string(begin) + ", +" + std::to_string(seg->size()) +
             ") lies past the end of the " + std::to_string(file.size) + "-byte file");
  return file.sub(begin, seg->size());
}

ir::NamedData read_named_data(const et::Program& program, const ExtendedHeader& h, const io::ByteView& file,
                              const std::string& path) {
  ir::NamedData out;
  const auto* named = program.named_data();
  if (!named) return out;
  for (uint32_t i = 0; i < named->size(); ++i) {
    const auto* entry = named->Get(i);
    const std::string what = "named_data[" + std::to_string(i) + "]";
    if (!entry->key()) fail(ErrorCode::InvalidFormat, path, what + ": expected a key");
    out[entry->key()->str()] = segment_bytes(program, entry->segment_index(), h, file, path, what);
  }
  return out;
}

io::ByteView delegate_bytes(const et::Program& program, const et::BackendDelegate& d, const ExtendedHeader& h,
                            const io::ByteView& file, const std::string& path, const std::string& what) {
  const auto* ref = d.processed();
  if (!ref) fail(ErrorCode::InvalidFormat, path, what + ": expected processed data");
  if (ref->location() == et::DataLocation::SEGMENT) return segment_bytes(program, ref->index(), h, file, path, what);
  const auto* inline_data = program.backend_delegate_data();
  if (!inline_data || ref->index() >= inline_data->size() || !inline_data->Get(ref->index())->data())
    fail(ErrorCode::InvalidFormat, path, what + ": inline data index " + std::to_string(ref->index()) + " out of range");
  const auto* data = inline_data->Get(ref->index())->data();
  return file.sub(static_cast<size_t>(data->data() - file.data), data->size());
}

const et::DelegateCall* find_delegate_call(const et::ExecutionPlan& plan, uint32_t delegate_index) {
  const auto* chains = plan.chains();
  for (uint32_t c = 0; chains && c < chains->size(); ++c) {
    const auto* instructions = chains->Get(c)->instructions();
    for (uint32_t i = 0; instructions && i < instructions->size(); ++i) {
      const auto* call = instructions->Get(i)->instr_args_as_DelegateCall();
      if (call && call->delegate_index() >= 0 && static_cast<uint32_t>(call->delegate_index()) == delegate_index) return call;
    }
  }
  return nullptr;
}

ir::TensorMeta declared_meta(const et::Tensor& t, const std::string& path, const std::string& what) {
  const std::optional<DType> dtype = dtype_from_scalar_type(t.scalar_type());
  if (!dtype) fail(ErrorCode::Unsupported, path, what + ": scalar type " + std::to_string(t.scalar_type()) + " is not supported");
  ir::TensorMeta meta{*dtype, {}, {}};
  const bool bounded = t.shape_dynamism() != et::TensorShapeDynamism::STATIC;
  for (uint32_t d = 0; t.sizes() && d < t.sizes()->size(); ++d) {
    const int32_t size = t.sizes()->Get(d);
    if (size < 0)
      fail(ErrorCode::InvalidFormat, path,
           what + ": size " + std::to_string(size) + " of dim " + std::to_string(d) + " is negative");
    meta.shape.push_back(bounded ? ir::Dim{-1, 0, size} : ir::Dim{size, 0, -1});
  }
  return meta;
}

const et::EValue* method_value(const et::ExecutionPlan& plan, int32_t value, const std::string& path, const std::string& what) {
  const auto* values = plan.values();
  if (value < 0 || !values || static_cast<uint32_t>(value) >= values->size())
    fail(ErrorCode::InvalidFormat, path, what + ": value index " + std::to_string(value) + " out of range");
  return values->Get(static_cast<uint32_t>(value));
}

// The first position of `value` among the call's arguments, or -1.
int64_t argument_position(const et::DelegateCall& call, int32_t value) {
  const auto* args = call.args();
  for (uint32_t a = 0; args && a < args->size(); ++a)
    if (args->Get(a) == value) return a;
  return -1;
}

PteMethodInput method_input(const et::ExecutionPlan& plan, int32_t value, const et::DelegateCall& call, const std::string& path,
                            const std::string& what) {
  const et::EValue* evalue = method_value(plan, value, path, what);
  PteMethodInput in;
  in.delegate_arg = argument_position(call, value);
  if (const et::Tensor* tensor = evalue->val_as_Tensor()) {
    in.meta = declared_meta(*tensor, path, what);
  } else if (evalue->val_type() == et::KernelTypes::Int) {
    in.type = ir::SlotType::Int;
  } else {
    fail(ErrorCode::Unsupported, path, what + ": expected a tensor or int input");
  }
  return in;
}

// ExecutionPlan.inputs and outputs mapped onto the delegate call's arguments: ExecuTorch passes
// every declared input, also one the delegate does not read, and returns only the method's outputs
// (an LLM export's delegate also returns values that the method's own kernels copy elsewhere).
void read_method_signature(const et::ExecutionPlan& plan, uint32_t delegate_index, const std::string& path,
                           const std::string& what, PteContents& out) {
  const et::DelegateCall* call = find_delegate_call(plan, delegate_index);
  if (!call || !plan.inputs() || !plan.outputs()) return;
  for (uint32_t i = 0; i < plan.inputs()->size(); ++i)
    out.method_inputs.push_back(method_input(plan, plan.inputs()->Get(i), *call, path, what + ", input " + std::to_string(i)));
  for (uint32_t i = 0; i < plan.outputs()->size(); ++i) {
    const int32_t value = plan.outputs()->Get(i);
    method_value(plan, value, path, what + ", output " + std::to_string(i));
    out.method_outputs.push_back(argument_position(*call, value));
  }
}

std::map<std::string, int64_t> read_constant_methods(const et::Program& program, const std::string& path) {
  std::map<std::string, int64_t> constants;
  const auto* plans = program.execution_plan();
  for (uint32_t p = 0; plans && p < plans->size(); ++p) {
    const et::ExecutionPlan& plan = *plans->Get(p);
    if (!plan.name() || (plan.inputs() && plan.inputs()->size() != 0) || !plan.outputs() || plan.outputs()->size() != 1) continue;
    const et::EValue* value = method_value(plan, plan.outputs()->Get(0), path, "plan '" + plan.name()->str() + "', output 0");
    if (const et::Int* constant = value->val_as_Int()) constants[plan.name()->str()] = constant->int_val();
  }
  return constants;
}

}  // namespace

bool looks_like_pte(const io::ByteView& file) {
  return file.size >= 8 && std::memcmp(file.data + kIdentifierOffset, "ET", 2) == 0;
}

PteContents read_pte(const io::ByteView& file, const std::string& path) {
  if (file.size < 8)
    fail(ErrorCode::InvalidFormat, path,
         "expected an ExecuTorch program of at least 8 bytes, found " + std::to_string(file.size));
  if (std::memcmp(file.data + kIdentifierOffset, et::ProgramIdentifier(), 4) != 0)
    fail(ErrorCode::InvalidFormat, path, "byte 4: expected file identifier \"" + std::string(et::ProgramIdentifier()) + "\"");
  const ExtendedHeader h = read_extended_header(file, path);
  flatbuffers::Verifier verifier(file.data, h.program_size);
  if (!et::VerifyProgramBuffer(verifier))
    fail(ErrorCode::InvalidFormat, path,
         "byte 0: the Program FlatBuffer fails verification: an offset, length or nesting is "
         "out of bounds");
  const et::Program& program = *et::GetProgram(file.data);
  const auto* plans = program.execution_plan();
  for (uint32_t p = 0; plans && p < plans->size(); ++p) {
    const auto* delegates = plans->Get(p)->delegates();
    for (uint32_t d = 0; delegates && d < delegates->size(); ++d) {
      const auto* delegate = delegates->Get(d);
      if (!delegate->id() || delegate->id()->str() != kMlxBackendId) continue;
      const std::string plan_name = plans->Get(p)->name() ? plans->Get(p)->name()->str() : std::to_string(p);
      const std::string what = "plan '" + plan_name + "', delegate " + std::to_string(d) + " (" + kMlxBackendId + ")";
      PteContents out;
      out.payload = delegate_bytes(program, *delegate, h, file, path, what);
      out.payload_name = path + ": " + what;
      out.named_data = read_named_data(program, h, file, path);
      read_method_signature(*plans->Get(p), d, path, what, out);
      out.constant_methods = read_constant_methods(program, path);
      return out;
    }
  }
  fail(ErrorCode::Unsupported, path,
       "execution_plan: expected a delegate with id \"MLXBackend\"; this program was not lowered with "
       "ExecuTorch's MLX partitioner");
}

}  // namespace wgml::frontend
