#include "src/proto/writer.h"

#include <charconv>

namespace proto {
namespace {
void append_num(std::string& out, std::size_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, std::size_t(r.ptr - buf));
}

void append_head(std::string& out, std::string_view op, std::string_view subject,
                 std::string_view sid, std::string_view reply) {
  out.append(op);
  out.append(subject);
  out.push_back(' ');
  out.append(sid);
  out.push_back(' ');
  if (!reply.empty()) {
    out.append(reply);
    out.push_back(' ');
  }
}
}  // namespace

void append_msg_line(std::string& out, std::string_view subject, std::string_view sid, std::string_view reply,
                     std::size_t payload_size) {
  append_head(out, "MSG ", subject, sid, reply);
  append_num(out, payload_size);
  out.append("\r\n");
}

void append_msg(std::string& out, std::string_view subject, std::string_view sid,
                std::string_view reply, std::string_view payload) {
  append_msg_line(out, subject, sid, reply, payload.size());
  out.append(payload);
  out.append("\r\n");
}

void append_hmsg(std::string& out, std::string_view subject, std::string_view sid,
                 std::string_view reply, std::string_view headers, std::string_view payload) {
  append_head(out, "HMSG ", subject, sid, reply);
  append_num(out, headers.size());
  out.push_back(' ');
  append_num(out, headers.size() + payload.size());
  out.append("\r\n");
  out.append(headers);
  out.append(payload);
  out.append("\r\n");
}

void append_err(std::string& out, std::string_view text) {
  out.append("-ERR '");
  out.append(text);
  out.append("'\r\n");
}

void append_info(std::string& out, std::string_view json) {
  out.append("INFO ");
  out.append(json);
  out.append("\r\n");
}

}  // namespace proto
