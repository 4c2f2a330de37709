#include "io/strict_json.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <string_view>
#include <vector>

namespace foxrl {
namespace {

using Json = nlohmann::json;

/// What stopped the parse, beyond nlohmann's own syntax errors.
enum class Stop { none, too_deep, duplicate_key };

/// Builds the document as nlohmann's DOM parser does, keeping a stack of
/// open containers (no recursion), and stops at the first container past
/// the depth limit or the first repeated key.
class StrictBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit StrictBuilder(Json& root) : root_(root) {}

  bool null() override { return put(Json(nullptr)); }
  bool boolean(bool v) override { return put(Json(v)); }
  bool number_integer(number_integer_t v) override { return put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(Json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return put(Json(v)); }
  bool string(string_t& v) override { return put(Json(std::move(v))); }
  bool binary(binary_t& v) override { return put(Json(std::move(v))); }

  bool start_object(std::size_t /*size*/) override { return open(Json::object()); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*size*/) override { return open(Json::array()); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    ++keys_seen_;
    if (stack_.back()->contains(k)) {
      stop_ = Stop::duplicate_key;
      duplicate_ = k;
      return false;
    }
    key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    error_position_ = position;
    last_token_ = last_token;
    error_ = ex.what();
    return false;
  }

  Stop stop() const { return stop_; }
  const std::string& duplicate() const { return duplicate_; }
  std::size_t keys_seen() const { return keys_seen_; }
  std::size_t error_position() const { return error_position_; }
  const std::string& last_token() const { return last_token_; }
  const std::string& error() const { return error_; }

 private:
  /// Places `v` as the root, the next array element or the value of the
  /// last key; returns where it went (containers are filled in place).
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    Json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }

  bool put(Json&& v) {
    place(std::move(v));
    return true;
  }

  bool open(Json&& container) {
    if (stack_.size() >= kMaxJsonDepth) {
      stop_ = Stop::too_deep;
      return false;
    }
    stack_.push_back(place(std::move(container)));
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  Json& root_;
  std::vector<Json*> stack_;
  std::string key_;
  Stop stop_ = Stop::none;
  std::string duplicate_;
  std::size_t keys_seen_ = 0;
  std::size_t error_position_ = 0;
  std::string last_token_;
  std::string error_;
};

/// Byte offset in `text` of the first container opened past depth `limit`
/// (`key_index` = 0) or of the `key_index`-th object key (1-based). Only
/// called on a prefix the parser accepted, so a plain scan of strings,
/// brackets and colons finds the same token the parser stopped at.
std::size_t locate(std::string_view text, std::size_t limit, std::size_t key_index) {
  std::size_t depth = 0, keys = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      std::size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r')) ++j;
      if (key_index > 0 && j < text.size() && text[j] == ':' && ++keys == key_index) return start;
    } else if (c == '[' || c == '{') {
      if (key_index == 0 && ++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

/// "<source>:<line>:<column>" of byte `offset` (both 1-based; columns count
/// bytes, as compilers do).
std::string where(std::string_view text, std::size_t offset, const std::string& source) {
  if (offset > text.size()) offset = text.size();
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return source + ":" + std::to_string(line) + ":" + std::to_string(offset - line_start + 1);
}

/// nlohmann's "[json.exception.parse_error.101] parse error at line 1,
/// column 5: syntax error while parsing value - invalid literal; last read:
/// '...'" without the prefix (the location is ours) and without the last
/// token (quoted again below, shortened and escaped).
std::string syntax_reason(const std::string& what) {
  std::string reason = what;
  if (reason.rfind("[json.exception", 0) == 0) {
    const std::size_t end = reason.find("] ");
    if (end != std::string::npos) reason = reason.substr(end + 2);
  }
  if (reason.rfind("parse error", 0) == 0) {
    const std::size_t colon = reason.find(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
  }
  const std::size_t last = reason.find("; last read:");
  if (last != std::string::npos) reason = reason.substr(0, last);
  return reason;
}

}  // namespace

Json parse_strict_json(const std::string& text, const std::string& source) {
  std::string_view body(text);
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // UTF-8 BOM, as editors on Windows write it
  // No value at all: said here, because nlohmann's wording for it differs
  // between its releases (3.11.3 gave it a message of its own).
  if (body.find_first_not_of(" \t\n\r") == std::string_view::npos)
    throw UsageError(where(body, body.size(), source) +
                     ": syntax error: no JSON value (the input is empty or only whitespace)");
  Json root;
  StrictBuilder builder(root);
  if (Json::sax_parse(body.begin(), body.end(), &builder)) return root;
  switch (builder.stop()) {
    case Stop::too_deep:
      throw UsageError(where(body, locate(body, kMaxJsonDepth, 0), source) + ": arrays and objects nest deeper than " +
                       std::to_string(kMaxJsonDepth) + " levels");
    case Stop::duplicate_key:
      throw UsageError(where(body, locate(body, 0, builder.keys_seen()), source) + ": key " +
                       quote_excerpt(builder.duplicate()) + " appears twice in one object");
    case Stop::none:
      break;
  }
  // The parser's position is one past the last byte it read: point at that byte.
  const std::size_t pos = builder.error_position() > 0 ? builder.error_position() - 1 : 0;
  std::string message = where(body, pos, source) + ": " + syntax_reason(builder.error());
  if (!builder.last_token().empty()) message += "; last read: " + quote_excerpt(builder.last_token());
  throw UsageError(message);
}

}  // namespace foxrl
