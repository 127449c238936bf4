// A STREAM.INFO with subjects_filter over a stream of 100,000 subjects took 0.1-0.3 s of the
// loop that also serves clients (shard 0 by default): building a sorted map of every subject,
// the JSON object and its text. Here the loop only copies the subject counts (a flat vector,
// in slices of kBigSliceNs: in one go it held the loop 12 ms, most of it the first touch of
// 4 MB of fresh pages) and the info without them; the API worker filters, sorts, pages and
// serialises, and frees what it built; the loop hands the reply text to the client's
// transport whole (publish_owned: copying 3 MB held it another 12 ms). Requests naming the
// stream wait behind it (in arrival order, as behind a big create), so a client sees its
// requests answered in order.
#include <algorithm>

#include "src/core/subject.h"
#include "src/js/api_worker.h"
#include "src/js/big_request.h"

namespace js {

namespace {
// A '*' or '>' that is a whole token.
bool has_wildcard_token(std::string_view filter) {
  for (std::string_view t : core::split_tokens(filter))
    if (t == "*" || t == ">") return true;
  return false;
}
}  // namespace

void page_big_info(jetstream::big_info& job) {
  auto& all = job.subjects;
  if (!job.filter.empty())
    std::erase_if(all, [&](const auto& e) { return !core::subject_matches(job.filter, e.first); });
  // Go encodes a map sorted by key. Merge sort: the store's order made std::sort's
  // introsort fall back to heap sort (a quarter of the worker's time in a profile).
  std::stable_sort(all.begin(), all.end());
  // Listed in slices, a subject removed and stored again meanwhile may come twice.
  all.erase(std::unique(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            all.end());
  const std::uint64_t total = all.size();
  const std::uint64_t offset = std::min<std::uint64_t>(job.offset, total);  // past the end: the end
  job.info["total"] = total;
  job.info["offset"] = offset;
  job.info["limit"] = total ? kSubjectDetailsLimit : 0;
  const auto first = all.begin() + std::ptrdiff_t(offset);
  const auto last = first + std::ptrdiff_t(std::min<std::uint64_t>(total - offset, kSubjectDetailsLimit));
  if (first != last) {
    // Appended in order without the ordered map's keyed insert (it scans every key).
    ojson subjects = ojson::object();
    auto& entries = static_cast<ojson::object_t::Container&>(subjects.get_ref<ojson::object_t&>());
    entries.reserve(std::size_t(last - first));
    for (auto it = first; it != last; ++it) entries.emplace_back(std::move(it->first), it->second);
    // Where stream::state_json puts it: before the deletion and consumer fields (the
    // object is rebuilt: its entries' keys are const, so nothing can be inserted before them).
    auto& old = static_cast<ojson::object_t::Container&>(job.info["state"].get_ref<ojson::object_t&>());
    ojson state = ojson::object();
    auto& entries_out = static_cast<ojson::object_t::Container&>(state.get_ref<ojson::object_t&>());
    for (auto& [key, value] : old) {
      if (!subjects.is_null() &&
          (key == "num_deleted" || key == "deleted" || key == "lost" || key == "consumer_count"))
        entries_out.emplace_back("subjects", std::move(subjects)), subjects = nullptr;
      entries_out.emplace_back(key, std::move(value));
    }
    if (!subjects.is_null()) entries_out.emplace_back("subjects", std::move(subjects));
    job.info["state"] = std::move(state);
  }
  all = {};
  job.text = job.info.dump();
  job.info = nullptr;  // freed here, not on the loop
}

bool wants_big_info(stream& s, std::string_view filter) {
  // A literal filter is one index lookup on the loop.
  return !filter.empty() && s.store().num_subjects() >= kBigInfoSubjects && has_wildcard_token(filter);
}

void jetstream::start_big_info(stream& s, std::string_view filter, std::uint64_t offset, ojson info,
                               std::string_view reply) {
  if (!_worker) _worker = std::make_unique<api_worker>(_host->wake_eventfd());
  big_info& job = *_infos.emplace_back(std::make_unique<big_info>());
  job.stream = s.config().name;
  job.reply = std::string(reply);
  job.filter = filter == ">" ? std::string() : std::string(filter);
  job.offset = offset;
  job.info = std::move(info);
  list_some_subjects(job);
}

// One slice of the job's subject list; once complete, the worker pages it. False when the
// stream is gone (nothing naming it runs meanwhile, but a server shutting JetStream down may).
bool jetstream::list_some_subjects(big_info& job) {
  stream* s = find(job.stream);
  if (s == nullptr) return false;
  const auto& clk = _host->clk();
  const base::nanos until = clk.monotonic_ns() + kBigSliceNs;
  while (!(job.listed = s->store().subject_list(job.subjects, job.cursor, 4096)) && clk.monotonic_ns() < until) {
  }
  if (job.listed) job.ticket = _worker->submit([&job] { page_big_info(job); });
  return true;
}

std::size_t jetstream::poll_big_info() {
  std::size_t work = 0;
  for (auto& job : _infos) {  // the first one still listing its subjects goes on
    if (job->listed) continue;
    if (!list_some_subjects(*job)) job->listed = job->gone = true;
    ++work;
    break;
  }
  while (!_infos.empty() && _infos.front()->listed && _worker->done(_infos.front()->ticket)) {  // in order
    big_info& job = *_infos.front();
    if (job.gone) {
      respond_error(job.reply, "stream_info_response", make_error(err::stream_not_found),
                    ojson{{"total", 0}, {"offset", 0}, {"limit", 0}});
    } else if (!job.reply.empty()) {
      _host->publish_owned(job.reply, std::move(job.text));
    }
    _infos.pop_front();
    ++work;
  }
  // Without a wake eventfd the loop must keep turning while the worker runs.
  if (!_infos.empty() && _host->wake_eventfd() < 0) ++work;
  return work;
}

}  // namespace js
