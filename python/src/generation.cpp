#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "bindings.h"
#include "llm/chat_format.h"
#include "wgml/generator.h"
#include "wgml/tokenizer.h"

namespace wgml::python {
namespace {

using namespace nb::literals;

// A Generator over the Session of a SessionHandle, which the Python object keeps alive.
struct GeneratorHandle {
  explicit GeneratorHandle(SessionHandle& handle) : session(handle), generator(handle.session) {}
  SessionHandle& session;
  Generator generator;
};

std::vector<int64_t> generate(GeneratorHandle& g, const std::vector<int64_t>& prompt, int64_t max_new_tokens, float temperature,
                              int64_t top_k, float top_p, uint64_t seed, const std::vector<int64_t>& stop_tokens,
                              int64_t max_sequence, const nb::object& on_token) {
  GenerationOptions options;
  options.max_new_tokens = max_new_tokens;
  options.sampling = SamplingOptions{temperature, top_k, top_p, seed};
  options.stop_tokens = stop_tokens;
  options.max_sequence = max_sequence;
  TokenCallback callback;
  if (!on_token.is_none())
    callback = [&on_token](int64_t token) {
      nb::gil_scoped_acquire acquired;
      return nb::cast<bool>(on_token(token));
    };
  return with_session(g.session, [&](Session&) { return g.generator.generate(prompt, options, callback); });
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::MaxNewTokens:
      return "max_new_tokens";
    case StopReason::StopToken:
      return "stop_token";
    case StopReason::Callback:
      return "callback";
    case StopReason::ContextFull:
      return "context_full";
  }
  return "?";
}

void bind_generation_stats(nb::module_& m) {
  nb::class_<GenerationStats>(m, "GenerationStats", "Where the time of one generate() call went.")
      .def_ro("prompt_tokens", &GenerationStats::prompt_tokens)
      .def_ro("generated_tokens", &GenerationStats::generated_tokens)
      .def_ro("prefill_calls", &GenerationStats::prefill_calls)
      .def_ro("prefill_ms", &GenerationStats::prefill_ms, "the prompt's calls")
      .def_ro("first_token_ms", &GenerationStats::first_token_ms, "from the start until the first new token was sampled")
      .def_ro("decode_ms", &GenerationStats::decode_ms, "every later token: its call, its logits read and its sampling")
      .def_ro("decode_totals", &GenerationStats::decode_totals, "GPU work of the decode steps together")
      .def_ro("decode_steps", &GenerationStats::decode_steps, "tokens made by a 1-token call")
      .def_prop_ro(
          "stop_reason", [](const GenerationStats& s) { return stop_reason_name(s.stop_reason); },
          "why generation ended: 'max_new_tokens', 'stop_token', 'callback' or 'context_full'")
      .def_prop_ro("prompt_tokens_per_s", &GenerationStats::prompt_tokens_per_s)
      .def_prop_ro("decode_tokens_per_s", &GenerationStats::decode_tokens_per_s);
}

nb::object logits_array(std::vector<float>&& logits) {
  auto* owned = new std::vector<float>(std::move(logits));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  return nb::ndarray<nb::numpy, float, nb::ndim<1>>(owned->data(), {owned->size()}, owner).cast();
}

void bind_generator(nb::module_& m) {
  nb::class_<GeneratorHandle>(m, "Generator", "The token loop over a Session (the wgml.Generator wrapper's native half).")
      .def(nb::init<SessionHandle&>(), "session"_a, nb::keep_alive<1, 2>())
      .def_prop_ro("max_tokens_per_call", [](const GeneratorHandle& g) { return g.generator.max_tokens_per_call(); })
      .def_prop_ro("vocab_size", [](const GeneratorHandle& g) { return g.generator.vocab_size(); })
      .def_prop_ro("position", [](const GeneratorHandle& g) { return g.generator.position(); })
      .def_prop_ro("max_context", [](const GeneratorHandle& g) { return g.generator.max_context(); })
      .def("generate", &generate, "prompt"_a, "max_new_tokens"_a, "temperature"_a, "top_k"_a, "top_p"_a, "seed"_a,
           "stop_tokens"_a, "max_sequence"_a, "on_token"_a.none(),
           "Feeds the prompt, then samples; on_token(token) -> bool hears each new token (False stops). Releases the GIL.")
      .def(
          "forward",
          [](GeneratorHandle& g, const std::vector<int64_t>& tokens) {
            return logits_array(with_session(g.session, [&](Session&) { return g.generator.forward(tokens); }));
          },
          "tokens"_a, "The logits row after feeding the tokens.")
      .def(
          "reset", [](GeneratorHandle& g) { g.generator.reset(); }, "Forgets the sequence: the next call starts at position 0.")
      .def_prop_ro("stats", [](const GeneratorHandle& g) { return g.generator.stats(); });
}

std::vector<TokenId> chat_prompt_ids(const Tokenizer& tokenizer, const std::string& user, const std::string& system,
                                     const std::optional<std::string>& format_name) {
  const std::optional<ChatFormat> format = format_name ? chat_format_from_name(*format_name) : detect_chat_format(tokenizer);
  if (!format)
    throw Error(ErrorCode::InvalidArgument, tokenizer.path() +
                                                ": the tokenizer's chat template is of no known format; name one: "
                                                "'llama3', 'chatml' or 'llama2'");
  return chat_prompt(tokenizer, *format, user, system);
}

void bind_tokenizer(nb::module_& m) {
  nb::class_<TextStream>(m, "TextStream", "Turns generated token ids into text as they come, whole characters only.")
      .def("push", &TextStream::push, "token"_a, "The text the token completes (empty while a character is incomplete).")
      .def("flush", &TextStream::flush, "What is still held back.");
  nb::class_<Tokenizer>(m, "Tokenizer", "A model's tokenizer (tokenizer.json or tokenizer.model).")
      .def(nb::new_([](const std::string& path) { return Tokenizer::load(path); }), "path"_a,
           "A model directory holding tokenizer.json or tokenizer.model, or one of those files.")
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text, std::optional<bool> add_bos) {
            return t.encode(text, add_bos.value_or(t.adds_bos()));
          },
          "text"_a, "add_bos"_a = nb::none(),
          "The ids of the text; BOS first when add_bos (default: as the model's tokenizer does).")
      .def(
          "decode", [](const Tokenizer& t, const std::vector<TokenId>& ids) { return t.decode(ids); }, "ids"_a)
      .def(
          "stream", [](const Tokenizer& t, const std::vector<TokenId>& context) { return t.stream(context); },
          "context"_a = std::vector<TokenId>{}, nb::keep_alive<0, 1>(),
          "A TextStream for the tokens after `context` (the prompt), which decides a first leading space.")
      .def("chat_prompt", &chat_prompt_ids, "user"_a, "system"_a = "", "format"_a = nb::none(),
           "The ids of a one-message chat prompt in the model's chat format ('llama3', 'chatml', 'llama2'; default: "
           "recognised from the tokenizer's template).")
      .def_prop_ro("bos_id", &Tokenizer::bos_id)
      .def_prop_ro("adds_bos", &Tokenizer::adds_bos)
      .def_prop_ro("eos_ids", &Tokenizer::eos_ids)
      .def_prop_ro("vocab_size", &Tokenizer::vocab_size)
      .def_prop_ro("chat_template", &Tokenizer::chat_template)
      .def_prop_ro("kind", &Tokenizer::kind, "'tokenizer.json', 'sentencepiece' or 'tiktoken'")
      .def_prop_ro("path", &Tokenizer::path);
}

}  // namespace

void bind_generation(nb::module_& m) {
  bind_generation_stats(m);
  bind_generator(m);
  bind_tokenizer(m);
}

}  // namespace wgml::python
