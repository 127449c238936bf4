#include "src/js/api_errors.h"

#include <gtest/gtest.h>

namespace js {
namespace {

TEST(api_errors, fixed_texts_and_codes) {
  EXPECT_EQ(make_error(err::stream_not_found), (api_error{404, 10059, "stream not found"}));
  EXPECT_EQ(make_error(err::subjects_overlap), (api_error{400, 10065, "subjects overlap with an existing stream"}));
  EXPECT_EQ(make_error(err::expected_stream), (api_error{400, 10060, "expected stream does not match"}));
  EXPECT_EQ(make_error(err::sealed), (api_error{400, 10109, "invalid operation on sealed stream"}));
  EXPECT_EQ(make_error(err::replicas_not_supported),
            (api_error{500, 10074, "replicas > 1 not supported in non-clustered mode"}));
  EXPECT_EQ(make_error(err::message_too_large), (api_error{400, 10054, "message size exceeds maximum allowed"}));
  EXPECT_EQ(make_error(err::no_message_found), (api_error{404, 10037, "no message found"}));
}

TEST(api_errors, templated_texts) {
  EXPECT_EQ(make_error(err::wrong_last_seq, "5").description, "wrong last sequence: 5");
  EXPECT_EQ(make_error(err::wrong_last_msg_id, "").description, "wrong last msg ID: ");
  EXPECT_EQ(make_error(err::sequence_not_found, "2").description, "sequence 2 not found");
  EXPECT_EQ(make_error(err::invalid_json).description, "invalid JSON");
  EXPECT_EQ(make_error(err::invalid_json, ": json: unknown field \"x\"").description,
            "invalid JSON: json: unknown field \"x\"");
  // Wrapper codes carry the detail as the whole text; config errors are 500, limits 503.
  EXPECT_EQ(make_error(err::stream_invalid_config, "max age needs to be >= 100ms"),
            (api_error{500, 10052, "max age needs to be >= 100ms"}));
  EXPECT_EQ(make_error(err::store_failed, "maximum messages exceeded"),
            (api_error{503, 10077, "maximum messages exceeded"}));
  EXPECT_EQ(make_error(err::rollup_failed, "rollup not permitted").code, 500);
}

TEST(api_errors, json_shape) {
  EXPECT_EQ(to_json(make_error(err::stream_not_found)).dump(),
            R"({"code":404,"err_code":10059,"description":"stream not found"})");
  EXPECT_EQ(to_json(api_error{503, 0, ""}).dump(), R"({"code":503})");
}

}  // namespace
}  // namespace js
