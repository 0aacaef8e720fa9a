#pragma once
// The HTTP side of `wgml serve` (docs/serve.md): OpenAI's /v1/completions, /v1/chat/completions
// (with and without Server-Sent Events) and /v1/models over one CompletionService. cpp-httplib is
// included by http_server.cpp alone.
#include <functional>
#include <string>

#include "serve/completion_service.h"

namespace wgml::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: a free port, which on_listening receives
};

// Binds, calls on_listening with the port, then serves until the process ends. Throws
// wgml::Error(Io) when the address cannot be bound.
void serve(CompletionService& service, const ServerOptions& options, const std::function<void(int port)>& on_listening);

}  // namespace wgml::serve
