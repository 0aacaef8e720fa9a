#include "serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>

namespace wgml::serve {
namespace {

using nlohmann::json;

// Request bodies past this are refused (413) before they are read into memory.
constexpr size_t kMaxBodyBytes = 16u << 20;

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_json(httplib::Response& response, int status, const json& body) {
  response.status = status;
  response.set_content(dump(body), "application/json");
}

// What a failure becomes: the client's mistakes are 400s naming the field; the rest 500s.
void send_error(httplib::Response& response, const std::exception& error) {
  if (const auto* request_error = dynamic_cast<const RequestError*>(&error))
    return send_json(response, 400,
                     error_body(error.what(), "invalid_request_error", request_error->param(), request_error->code_name()));
  const auto* wgml_error = dynamic_cast<const Error*>(&error);
  if (wgml_error && wgml_error->code() == ErrorCode::InvalidArgument)
    return send_json(response, 400, error_body(error.what(), "invalid_request_error"));
  send_json(response, 500, error_body(error.what(), "server_error"));
}

class Routes {
 public:
  explicit Routes(CompletionService& service) : service_(service), started_(now_seconds()) {}

  void add_to(httplib::Server& server) {
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& response) {
      send_json(response, 200, models_response(service_.model_name(), started_));
    });
    server.Post("/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
      handle(Endpoint::Completions, request, response);
    });
    server.Post("/v1/chat/completions", [this](const httplib::Request& request, httplib::Response& response) {
      handle(Endpoint::ChatCompletions, request, response);
    });
  }

 private:
  void handle(Endpoint endpoint, const httplib::Request& http_request, httplib::Response& response) {
    try {
      const CompletionRequest request = parse_request(endpoint, http_request.body);
      PreparedRequest prepared = service_.prepare(request);
      const ResponseHeader header = next_header(endpoint);
      if (request.stream) return stream(endpoint, header, std::move(prepared), request.include_usage, response);
      send_json(response, 200, completion_response(endpoint, header, service_.complete(prepared)));
    } catch (const std::exception& error) {
      send_error(response, error);
    }
  }

  // Server-Sent Events: a chat stream's first chunk gives the role, then one chunk per piece of
  // text, a last one with the finish reason (and the usage when asked), then [DONE]. Generation
  // runs inside the provider, so the request waits for the session there; a client that goes
  // away ends its generation.
  void stream(Endpoint endpoint, const ResponseHeader& header, PreparedRequest prepared, bool include_usage,
              httplib::Response& response) {
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider("text/event-stream", [this, endpoint, header, prepared = std::move(prepared),
                                                                include_usage](size_t, httplib::DataSink& sink) {
      const auto send = [&sink](const std::string& event) { return sink.write(event.data(), event.size()); };
      try {
        if (endpoint == Endpoint::ChatCompletions) send(sse_event(stream_chunk(endpoint, header, "", std::nullopt, true)));
        const CompletionResult result = service_.complete(
            prepared, [&](std::string_view text) { return send(sse_event(stream_chunk(endpoint, header, text, std::nullopt))); });
        send(sse_event(stream_chunk(endpoint, header, "", result.finish_reason)));
        if (include_usage) send(sse_event(usage_chunk(endpoint, header, result)));
      } catch (const std::exception& error) {
        send(sse_event(error_body(error.what(), "server_error")));
      }
      send(std::string(kSseDone));
      sink.done();
      return true;
    });
  }

  ResponseHeader next_header(Endpoint endpoint) {
    const char* prefix = endpoint == Endpoint::ChatCompletions ? "chatcmpl-" : "cmpl-";
    return {prefix + std::to_string(started_) + "-" + std::to_string(++requests_), now_seconds(), service_.model_name()};
  }

  CompletionService& service_;
  const int64_t started_;
  std::atomic<int64_t> requests_{0};
};

}  // namespace

void serve(CompletionService& service, const ServerOptions& options, const std::function<void(int port)>& on_listening) {
  // A client that closes its connection mid-stream must not end the server.
  std::signal(SIGPIPE, SIG_IGN);
  httplib::Server server;
  Routes routes(service);
  routes.add_to(server);
  server.set_payload_max_length(kMaxBodyBytes);
  // Paths and methods that do not exist, bodies that are too long: OpenAI's error object too.
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string what =
        response.status == 404 ? "no route " + request.method + " " + request.path : "HTTP " + std::to_string(response.status);
    response.set_content(dump(error_body(what, "invalid_request_error")), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr thrown) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& error) {
      send_error(response, error);
    } catch (...) {
      send_json(response, 500, error_body("unknown failure", "server_error"));
    }
  });
  const int port = options.port == 0 ? server.bind_to_any_port(options.host) : options.port;
  if (port < 0 || (options.port != 0 && !server.bind_to_port(options.host, options.port)))
    throw Error(ErrorCode::Io, "wgml serve: cannot listen on " + options.host + ":" + std::to_string(options.port) +
                                   " (the address is in use or not this machine's)");
  on_listening(port);
  if (!server.listen_after_bind())
    throw Error(ErrorCode::Io, "wgml serve: listening on " + options.host + ":" + std::to_string(port) + " failed");
}

}  // namespace wgml::serve
