#include "src/js/ack_confirm.h"

namespace js {

void held_ack_replies::hold(std::string reply, std::uint64_t next_gen) {
  _q.push_back(held{next_gen, std::move(reply)});
}

std::vector<std::string> held_ack_replies::written(std::uint64_t gen) {
  std::vector<std::string> out;
  while (!_q.empty() && _q.front().gen <= gen) {
    out.push_back(std::move(_q.front().reply));
    _q.pop_front();
  }
  return out;
}

void held_ack_replies::failed(std::uint64_t next_gen) {
  for (auto& h : _q) h.gen = next_gen;
}

std::vector<std::string> held_ack_replies::take_all() {
  std::vector<std::string> out;
  for (auto& h : _q) out.push_back(std::move(h.reply));
  _q.clear();
  return out;
}

}  // namespace js
