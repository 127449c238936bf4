// `peregrine server mappings SRC DEST [SUBJECT...]`: tries a subject mapping locally with the
// server's own transform code (src/js/subject_transform), as natscli does without a server.
#include <iostream>

#include "src/cli/commands.h"
#include "src/js/subject_transform.h"

namespace peregrine::cli {

void add_server_commands(CLI::App& app) {
  CLI::App* server = app.add_subcommand("server", "server tools that need no connection")->require_subcommand(1);
  struct mapping_args {
    std::string src, dest;
    std::vector<std::string> subjects;
  };
  auto a = std::make_shared<mapping_args>();
  CLI::App* mappings = server->add_subcommand("mappings", "test a subject mapping (transform) on subjects")->alias("mapping");
  mappings->add_option("source", a->src, "source subject filter, e.g. \"orders.*\"")->required();
  mappings->add_option("destination", a->dest, "destination, e.g. \"orders.{{wildcard(1)}}.archived\"")->required();
  mappings->add_option("subjects", a->subjects, "subjects to transform (none: read them from stdin, one a line)");
  mappings->callback([a] {
    std::string error;
    auto tr = js::subject_transform::parse(a->src, a->dest, error);
    if (!tr) throw cli_error(error);
    std::vector<std::string> subjects = a->subjects;
    if (subjects.empty())
      for (std::string line; std::getline(std::cin, line);)
        if (!line.empty()) subjects.push_back(line);
    bool all_matched = true;
    for (const auto& s : subjects) {
      if (auto out = tr->apply(s)) {
        std::printf("%s\n", out->c_str());
      } else {
        std::fprintf(stderr, "peregrine: error: %s does not match %s\n", s.c_str(), a->src.c_str());
        all_matched = false;
      }
    }
    if (!all_matched) throw cli_error("some subjects did not match the source");
  });
}

}  // namespace peregrine::cli
