// Subcommand groups of the `peregrine` CLI (natscli's command tree) and what they share.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "src/cli/cli_format.h"
#include "src/cli/client.h"

namespace peregrine::cli {

// Global flags and the lazily opened connection every command uses.
struct cli_context {
  connect_options conn;
  std::unique_ptr<client> cl;
  client& connect() {
    if (!cl) cl = std::make_unique<client>(conn);
    return *cl;
  }
};

void add_account_commands(CLI::App& app, cli_context& ctx);
void add_stream_commands(CLI::App& app, cli_context& ctx);
void add_stream_message_commands(CLI::App& stream, cli_context& ctx);  // get, rmm, view, purge, subjects
void add_consumer_commands(CLI::App& app, cli_context& ctx);
void add_consumer_next_command(CLI::App& consumer, cli_context& ctx);
void add_core_commands(CLI::App& app, cli_context& ctx);  // pub, sub, req, reply
void add_sub_command(CLI::App& app, cli_context& ctx);
void add_kv_commands(CLI::App& app, cli_context& ctx);
void add_server_commands(CLI::App& app);  // server mappings

// --- shared helpers ---
// The server's JSON as natscli prints it with --json: indented, without the API "type" tag.
void print_json(ordered_json j);
// "15:04:05" now (UTC).
std::string now_hms();
// Unix nanoseconds now.
int64_t now_ns();
// Header block "K: V" lines of a message (none: empty).
std::string header_lines(natsMsg* m);
// The message payload as a string.
std::string payload_of(natsMsg* m);
// A fresh 22-character random ID in NUID's alphabet (templates' {{ID}}, batch IDs).
std::string random_id();
// natscli body templates: {{Count}}, {{ID}}, {{Time}}, {{TimeStamp}}, {{Unix}}, {{UnixNano}},
// {{Random min max}}; cli_error on an unknown one.
std::string expand_template(const std::string& in, int64_t count);
// Positive integer argument check for CLI11 options.
const CLI::Validator& positive();

// $JS.ACK reply subject fields (v1 and v2 forms); ok false when `reply` is not an ACK subject.
struct ack_meta {
  bool ok = false;
  std::string stream, consumer;
  uint64_t delivered = 0, stream_seq = 0, consumer_seq = 0, pending = 0;
  int64_t timestamp_ns = 0;
};
ack_meta parse_ack_subject(const std::string& reply);

// A request answered by a stream of replies (MSG.NEXT batches, batched direct gets): a fresh
// inbox with a synchronous subscription on it, the request published with that inbox as its
// reply subject. Read the replies with natsSubscription_NextMsg(&m, sub.get(), ...).
struct reply_stream {
  std::unique_ptr<natsInbox, void (*)(natsInbox*)> inbox{nullptr, natsInbox_Destroy};
  std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> sub{nullptr, natsSubscription_Destroy};
};
reply_stream send_for_replies(client& cl, const std::string& subject, const std::string& body);

// Pulls up to `batch` messages from STREAM > CONSUMER, waiting at most expires_ms; returns them
// in order (fewer on timeout, none when nothing is there).
std::vector<msg_ptr> pull(client& cl, const std::string& stream, const std::string& consumer, int batch,
                          int64_t expires_ms, const std::string& group = "");

}  // namespace peregrine::cli
