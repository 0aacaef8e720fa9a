#include "llm/model_work.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/slot_visit.h"
#include "llm/random_constants.h"

namespace wgml::llm {
namespace {

// Which tensors hold values made from constants alone (a weight's transpose or reshape), and how
// many elements, followed through the program in order: temps are reused, so a tensor holds such a
// value until something else writes it, and an exporter gives temps no metadata, so the count is
// carried from the constants (the largest a writing instruction reads: right for the transposes,
// reshapes and casts a weight goes through; a weight dequantized from packed words before a dense
// product would count as its words, which no export here does: their products read them packed).
class ConstantTracker {
 public:
  explicit ConstantTracker(const ir::Program& program) : numel_(program.num_tensors(), 0) {
    for (uint32_t t = 0; t < program.num_constant_tensors && t < numel_.size(); ++t)
      if (const ir::TensorMeta* meta = program.meta(ir::Tid{t})) numel_[t] = meta->static_numel().value_or(0);
  }

  // The elements of the constant value `t` holds, or 0 where it holds none.
  uint64_t constant_numel(ir::Tid t) const { return t.idx < numel_.size() ? numel_[t.idx] : 0; }

  void after(const ir::Instruction& instruction) {
    bool from_constants = true;
    uint64_t numel = 0;
    writes_.clear();
    ir::visit_slots(
        instruction,
        [&](ir::Tid t, ir::FieldRole role, std::string_view) {
          if (role != ir::FieldRole::Write) {
            from_constants = from_constants && constant_numel(t) > 0;
            numel = std::max(numel, constant_numel(t));
          }
          if (role != ir::FieldRole::Read) writes_.push_back(t.idx);
        },
        [&](ir::Vid, std::string_view) { from_constants = false; });
    for (uint32_t t : writes_)
      if (t < numel_.size()) numel_[t] = from_constants ? numel : 0;
  }

 private:
  std::vector<uint64_t> numel_;
  std::vector<uint32_t> writes_;
};

std::optional<uint64_t> static_numel(const ir::Program& program, ir::Tid t) {
  const ir::TensorMeta* meta = program.meta(t);
  return meta ? meta->static_numel() : std::nullopt;
}

// Whether the rows a product multiplies are set by the call: neither x nor the product has a static
// shape in the metadata. Exporters give temps none, so a product whose rows are static but whose
// tensors are temps counts as per token; a program's logits output does carry its shape, which is
// what tells an lm_head that makes only the last row's logits.
bool rows_follow_tokens(const ir::Program& program, ir::Tid x, ir::Tid out) {
  return !static_numel(program, x) && !static_numel(program, out);
}

void count_product(const ir::Program& program, ir::Tid x, ir::Tid out, uint64_t weight_elements, ModelWork& work) {
  (rows_follow_tokens(program, x, out) ? work.product_elements_per_token : work.product_elements_per_call) += weight_elements;
}

// Adds `instruction`'s weight elements where it is a matrix product whose weight holds a constant.
void count_products(const ir::Program& program, const ir::Instruction& instruction, const ConstantTracker& tracker,
                    ModelWork& work) {
  const ir::Node* node = ir::as_node(instruction);
  if (!node) return;
  if (const auto* mm = std::get_if<ir::AddmmNode>(node); mm && tracker.constant_numel(mm->mat1) == 0) {
    if (const uint64_t n = tracker.constant_numel(mm->mat2)) count_product(program, mm->mat1, mm->out, n, work);
  } else if (const auto* q = std::get_if<ir::QuantizedMatmulNode>(node); q && q->bits > 0) {
    if (const uint64_t words = tracker.constant_numel(q->w)) count_product(program, q->x, q->out, words * 32 / q->bits, work);
  }
}

}  // namespace

double ModelWork::product_flop(int64_t tokens, int64_t calls) const {
  return 2.0 * (static_cast<double>(product_elements_per_token) * static_cast<double>(tokens) +
                static_cast<double>(product_elements_per_call) * static_cast<double>(calls));
}

ModelWork model_work(const ir::Program& program) {
  ModelWork work;
  for (const ConstantInfo& c : describe_constants(program))
    if (!c.gathered_only) work.weight_bytes_per_step += c.loaded_bytes;
  ConstantTracker tracker(program);
  if (program.has_init_chain())
    for (const ir::Instruction& instruction : program.chains[program.init_chain_idx].instructions) tracker.after(instruction);
  for (const ir::Instruction& instruction : program.chains[program.main_chain_idx].instructions) {
    count_products(program, instruction, tracker, work);
    tracker.after(instruction);
  }
  return work;
}

}  // namespace wgml::llm
