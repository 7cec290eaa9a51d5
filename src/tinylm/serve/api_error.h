#pragma once
// An error the API reports to its client as an OpenAI error object,
// {"error": {"message", "type", "param", "code"}}, with an HTTP status.
#include <stdexcept>
#include <string>

namespace tinylm::serve {

struct ApiError : std::runtime_error {
  ApiError(int http_status, std::string error_type, std::string message, std::string parameter = {},
           std::string error_code = {})
      : std::runtime_error(std::move(message)),
        status(http_status),
        type(std::move(error_type)),
        param(std::move(parameter)),
        code(std::move(error_code)) {}
  int status;
  std::string type, param, code;
};

// 400 invalid_request_error about one parameter.
[[noreturn]] inline void invalid(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", message, param);
}

}  // namespace tinylm::serve
