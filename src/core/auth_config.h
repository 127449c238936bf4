#pragma once
// Reads the user and permission parts of nats-server's `authorization` block (see
// auth_types.h) and checks them for consistency once the whole file is read.
#include <string>
#include <vector>

#include "src/core/auth_types.h"
#include "src/core/config_file.h"

namespace core {

struct server_options;

// `users: [ {user, password, nkey, permissions}, ... ]`. On a bad value returns false with
// `error` = "<file>:<line>:<col>: <reason>"; unknown keys become warnings.
bool parse_users(const config_value& v, std::vector<user_config>& out, std::string& error,
                 std::vector<std::string>& warnings);
// `{publish, subscribe, allow_responses}` (also default_permissions).
bool parse_permissions(const config_value& v, permissions& out, std::string& error,
                       std::vector<std::string>& warnings);
// `accounts { NAME { users, exports, imports, jetstream } }`.
bool parse_accounts(const config_value& v, std::vector<account_config>& out, std::string& error,
                    std::vector<std::string>& warnings);
// Cross-checks: no token beside users, no duplicate users, no_auth_user names a user, valid
// nkeys. `error` says what is wrong.
bool validate_auth(const server_options& o, std::string& error);

}  // namespace core
