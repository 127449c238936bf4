#pragma once
// JetStream as a core service: the $JS.API handlers, streams and (later) consumers.
#include <cstddef>
#include <memory>
#include <vector>

#include "src/core/service.h"

namespace js {

std::unique_ptr<core::service> make_jetstream_service();
// --js_threads N: n instances sharing one placement; instance i runs on owner thread i and
// instance 0 serves $JS.API (jetstream_owners.h).
std::vector<std::unique_ptr<core::service>> make_jetstream_owners(std::size_t n);

}  // namespace js
