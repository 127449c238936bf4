#pragma once
// JetStream as a core service: the $JS.API handlers, streams and (later) consumers.
#include <memory>

#include "src/core/service.h"

namespace js {

std::unique_ptr<core::service> make_jetstream_service();

}  // namespace js
